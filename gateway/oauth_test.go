package gateway

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/labstack/echo/v4"

	"github.com/mirobody/mirobody-go/gateway/internal/oauth"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/registry"
)

// TestOAuthAgentToken checks the token issuer of gateway/design.md "Tokens": an
// agent token works on /mcp with the BASE profile, is an RFC 9068 JWT that
// the JWKS verifies, and every kind of bad token gets the same 401.
func TestOAuthAgentToken(t *testing.T) {
	f := startFakes(t)
	s := startService(t, testConfig(t, f.url))
	url := mcpURL(s)
	ctx := context.Background()
	const acct = "0b6b1f0e-8a39-4a55-9a3c-4a5f1d0e2c11"
	tok, err := s.oauth.Tokens().MintAgent(ctx, &oauth.AgentTokenRequest{AccountID: acct, SessionID: "sess-1", Agent: "base", TTL: time.Hour})
	must(t, err)

	resp, b := post(t, url, whoami, "Authorization", "Bearer "+tok)
	if resp.StatusCode != 200 || !strings.Contains(string(b), acct) {
		t.Fatalf("tools/call with an agent token: %d %s", resp.StatusCode, b)
	}
	f.mu.Lock()
	last := f.calls[len(f.calls)-1]
	f.mu.Unlock()
	if last.Caller.Agent != agent.AgentBase || last.Caller.AccountID != acct {
		t.Errorf("caller = %+v, want agent base for %s", last.Caller, acct)
	}

	// The token is what gateway/design.md "Tokens" promises, and the JWKS verifies it.
	resp, b = send(t, http.MethodGet, strings.TrimSuffix(url, "/mcp")+"/.well-known/jwks.json", "")
	if resp.StatusCode != 200 {
		t.Fatalf("jwks: %d %s", resp.StatusCode, b)
	}
	var set struct {
		Keys []struct{ Kid, X string }
	}
	must(t, json.Unmarshal(b, &set))
	var claims jwt.MapClaims
	parsed, err := jwt.ParseWithClaims(tok, &claims, func(tk *jwt.Token) (any, error) {
		for _, k := range set.Keys {
			if k.Kid == tk.Header["kid"] {
				x, err := base64.RawURLEncoding.DecodeString(k.X)
				return ed25519.PublicKey(x), err
			}
		}
		return nil, errors.New("unknown signing key")
	}, jwt.WithValidMethods([]string{"EdDSA"}))
	must(t, err)
	if parsed.Header["typ"] != "at+jwt" {
		t.Errorf("typ = %v", parsed.Header["typ"])
	}
	exp, _ := claims.GetExpirationTime()
	iat, _ := claims.GetIssuedAt()
	if d := exp.Sub(iat.Time); d > 10*time.Minute {
		t.Errorf("agent token lives %s, want <= %s", d, 10*time.Minute)
	}
	for k, want := range map[string]any{"iss": "https://mcp.example", "sub": acct, "scope": "mcp", "agent": "base", "sid": "sess-1"} {
		if claims[k] != want {
			t.Errorf("claim %s = %v, want %v", k, claims[k], want)
		}
	}
	if aud, _ := claims.GetAudience(); len(aud) != 1 || aud[0] != "https://mcp.example/mcp" {
		t.Errorf("aud = %v", aud)
	}
	if claims["jti"] == "" || claims["jti"] == nil {
		t.Error("no jti")
	}

	// Bad tokens: all the same 401 with the challenge of gateway/design.md "Auth on /mcp".
	bad := map[string]string{}
	wrongAud, err := s.oauth.Tokens().Mint(ctx, oauth.AccessClaims{RegisteredClaims: jwt.RegisteredClaims{Subject: acct, Audience: jwt.ClaimStrings{"https://other.example/mcp"}}, Scope: "mcp"}, time.Minute)
	must(t, err)
	bad["wrong audience"] = wrongAud
	// Same keys, a lifetime that ended an hour ago.
	expired, err := s.oauth.Tokens().Mint(ctx, oauth.AccessClaims{RegisteredClaims: jwt.RegisteredClaims{Subject: acct, Audience: jwt.ClaimStrings{"https://mcp.example/mcp"}}, Scope: "mcp"}, -time.Hour)
	must(t, err)
	bad["expired"] = expired
	bad["bad signature"] = tok[:len(tok)-4] + "AAAA"
	_, other, _ := ed25519.GenerateKey(nil)
	forged := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{"iss": "https://mcp.example", "aud": "https://mcp.example/mcp", "sub": acct, "scope": "mcp", "exp": time.Now().Add(time.Hour).Unix()})
	forged.Header["typ"], forged.Header["kid"] = "at+jwt", parsed.Header["kid"]
	bad["foreign key"], err = forged.SignedString(other)
	must(t, err)
	none := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"iss": "https://mcp.example", "aud": "https://mcp.example/mcp", "sub": acct, "scope": "mcp", "exp": time.Now().Add(time.Hour).Unix()})
	none.Header["typ"] = "at+jwt"
	bad["alg none"], err = none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	must(t, err)
	for name, token := range bad {
		t.Run(name, func(t *testing.T) {
			resp, b := post(t, url, whoami, "Authorization", "Bearer "+token)
			if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != challenge {
				t.Errorf("%d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), b)
			}
		})
	}

	if _, err := s.oauth.Tokens().MintAgent(ctx, &oauth.AgentTokenRequest{AccountID: acct, Agent: "nobody"}); err == nil {
		t.Error("an unknown agent got a token")
	}
}

// TestOAuthEndpoints covers what needs no stored state: metadata, CORS for
// browser clients, registration checks and the /oauth rate limit.
func TestOAuthEndpoints(t *testing.T) {
	f := startFakes(t)
	cfg := testConfig(t, f.url)
	cfg.RateLimitIP = 60 // a burst of 6
	base := strings.TrimSuffix(startGateway(t, cfg), "/mcp")

	resp, b := send(t, http.MethodGet, base+"/.well-known/oauth-authorization-server", "", "Origin", "https://inspector.example")
	var m struct {
		Issuer                            string   `json:"issuer"`
		TokenEndpoint                     string   `json:"token_endpoint"`
		CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
		ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported"`
	}
	must(t, json.Unmarshal(b, &m))
	if resp.StatusCode != 200 || m.Issuer != "https://mcp.example" || m.TokenEndpoint != "https://mcp.example/oauth/token" ||
		m.CodeChallengeMethodsSupported[0] != "S256" || !m.ClientIDMetadataDocumentSupported || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("metadata: %d %+v %v", resp.StatusCode, m, resp.Header)
	}
	for _, tc := range []struct{ body, err string }{
		{`{`, "invalid_client_metadata"},
		{`{"redirect_uris":["http://evil.example/cb"]}`, "invalid_redirect_uri"},
		{`{"redirect_uris":["http://127.0.0.1/cb"],"grant_types":["client_credentials"]}`, "invalid_client_metadata"},
		{`{"redirect_uris":["http://127.0.0.1/cb"],"response_types":["token"]}`, "invalid_client_metadata"},
	} {
		resp, b := send(t, http.MethodPost, base+"/oauth/register", tc.body, "Content-Type", "application/json")
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		if resp.StatusCode != 400 || e.Error != tc.err {
			t.Errorf("register %s: %d %s", tc.body, resp.StatusCode, b)
		}
	}
	limited := false
	for range 10 {
		if resp, _ := send(t, http.MethodGet, base+"/oauth/authorize", ""); resp.StatusCode == http.StatusTooManyRequests {
			limited = resp.Header.Get("Retry-After") != ""
			break
		}
	}
	if !limited {
		t.Error("/oauth/* is not rate limited per IP")
	}
}

func TestOAuthBodyLimit(t *testing.T) {
	f := startFakes(t)
	base := strings.TrimSuffix(startGateway(t, testConfig(t, f.url)), "/mcp")
	resp, _ := send(t, http.MethodPost, base+"/oauth/token", "grant_type=refresh_token&refresh_token="+strings.Repeat("x", 70<<10),
		"Content-Type", "application/x-www-form-urlencoded")
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a 70 KiB token request: %d", resp.StatusCode)
	}
}

// TestFlowCookie: the cookie that binds an external server's OAuth flow
// to a browser is HttpOnly, SameSite=Lax, Secure on an https public URL
// and sent to the callback only; it opens for its own state only, and
// not after tampering (issue 15, finding 4).
func TestFlowCookie(t *testing.T) {
	box, err := newFlowBox("a test secret key of enough bytes..")
	must(t, err)
	s := &Service{opts: Options{Config: &conf.Config{MCPPublicURL: "https://mcp.example"}}, flows: box}
	e := echo.New()
	rec := httptest.NewRecorder()
	must(t, s.setFlowCookie(e.NewContext(httptest.NewRequest(http.MethodPost, "/api/mcp-servers", nil), rec), "acct", "cal", "state-1"))
	cookies := rec.Result().Cookies()
	if len(cookies) != 1 {
		t.Fatalf("cookies %v", cookies)
	}
	ck := cookies[0]
	if !ck.HttpOnly || !ck.Secure || ck.SameSite != http.SameSiteLaxMode || ck.Path != registry.OAuthCallbackPath || ck.MaxAge != 600 {
		t.Fatalf("flow cookie %+v", ck)
	}
	open := func(state string, c *http.Cookie) *flow {
		req := httptest.NewRequest(http.MethodGet, registry.OAuthCallbackPath, nil)
		if c != nil {
			req.AddCookie(c)
		}
		return s.openFlowCookie(e.NewContext(req, httptest.NewRecorder()), state)
	}
	if f := open("state-1", ck); f == nil || f.AccountID != "acct" || f.Name != "cal" {
		t.Fatalf("the flow's own browser: %+v", f)
	}
	renamed := *ck
	renamed.Name = flowCookieName("state-2")
	tampered := *ck
	tampered.Value = ck.Value[:len(ck.Value)-2] + "AA"
	for name, tc := range map[string]struct {
		state  string
		cookie *http.Cookie
	}{
		"no cookie (another browser)":      {"state-1", nil},
		"another state":                    {"state-2", ck},
		"the cookie renamed for the state": {"state-2", &renamed},
		"tampered":                         {"state-1", &tampered},
		"no state":                         {"", ck},
	} {
		if f := open(tc.state, tc.cookie); f != nil {
			t.Errorf("%s: opened %+v", name, f)
		}
	}
}
