package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/ssrf"
)

func TestOAuthRedirectURIs(t *testing.T) {
	registered := []string{"http://127.0.0.1/callback", "http://localhost:8080/cb?x=1", "https://app.example/oauth/cb", "cursor://anysphere.cursor/cb"}
	for _, tc := range []struct {
		uri  string
		want bool
	}{
		{"https://app.example/oauth/cb", true},
		{"https://app.example/oauth/cb/", false},
		{"https://app.example/oauth/cb?extra=1", false},
		{"https://app.example:444/oauth/cb", false},
		{"http://127.0.0.1:53111/callback", true}, // RFC 8252: any loopback port
		{"http://127.0.0.1/callback", true},
		{"http://127.0.0.1:53111/other", false},
		{"http://[::1]:53111/callback", false}, // a different loopback host is another URI
		{"http://localhost:9999/cb?x=1", true},
		{"http://localhost:9999/cb?x=2", false},
		{"http://127.0.0.1.evil.example:80/callback", false},
		{"cursor://anysphere.cursor/cb", true},
		{"cursor://anysphere.cursor/cb2", false},
		{"https://app.example/oauth/cb#frag", false},
	} {
		if got := redirectAllowed(registered, tc.uri); got != tc.want {
			t.Errorf("redirectAllowed(%q) = %v, want %v", tc.uri, got, tc.want)
		}
	}
	for _, tc := range []struct {
		uris []string
		ok   bool
	}{
		{[]string{"https://app.example/cb"}, true},
		{[]string{"http://127.0.0.1:3000/cb", "http://[::1]/cb", "http://localhost/cb"}, true},
		{[]string{"com.example.app:/oauth"}, true},
		{nil, false},
		{[]string{"http://app.example/cb"}, false},
		{[]string{"https://app.example/cb#x"}, false},
		{[]string{"javascript:alert(1)"}, false},
		{[]string{"/relative"}, false},
		{[]string{"https:///nohost"}, false},
	} {
		if err := validRedirectURIs(tc.uris); (err == nil) != tc.ok {
			t.Errorf("validRedirectURIs(%q) = %v, want ok=%v", tc.uris, err, tc.ok)
		}
	}
}

func TestOAuthSSRFGuard(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		public bool
	}{
		{"8.8.8.8", true}, {"2606:4700::1111", true},
		{"127.0.0.1", false}, {"::1", false}, {"10.1.2.3", false}, {"192.168.0.1", false}, {"172.16.0.1", false},
		{"169.254.169.254", false}, {"fe80::1", false}, {"fc00::1", false}, {"100.64.0.1", false}, {"0.0.0.0", false},
		{"::ffff:127.0.0.1", false}, {"224.0.0.1", false}, {"::", false},
	} {
		if got := ssrf.Refusal(netip.MustParseAddr(tc.addr)) == ""; got != tc.public {
			t.Errorf("ssrf.Refusal(%s) == \"\" is %v, want %v", tc.addr, got, tc.public)
		}
	}

	var docURL string
	mux := http.NewServeMux()
	mux.HandleFunc("/client.json", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"client_id":%q,"client_name":"Doc","redirect_uris":["http://127.0.0.1/cb"]}`, docURL)
	})
	mux.HandleFunc("/big.json", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"client_name":"%s"}`, strings.Repeat("x", metadataMaxBytes))
	})
	mux.HandleFunc("/moved.json", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/client.json", http.StatusFound)
	})
	mux.HandleFunc("/secret.json", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"client_id":%q,"redirect_uris":["http://127.0.0.1/cb"],"token_endpoint_auth_method":"client_secret_basic"}`, docURL)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	docURL = srv.URL + "/client.json"
	log := servicetest.Logger(t)
	ctx := context.Background()

	guarded := newClientResolver(nil, false, log)
	if _, err := guarded.resolve(ctx, docURL); !errors.Is(err, errUnknownClient) {
		t.Errorf("an http loopback document was accepted: %v", err)
	}
	// https to a loopback address is refused at dial time, after DNS.
	guarded.http.Transport.(*http.Transport).TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	if _, err := guarded.fetch(ctx, "https://"+strings.TrimPrefix(srv.URL, "http://")+"/client.json"); err == nil || !strings.Contains(err.Error(), "not public") {
		t.Errorf("a loopback address was dialed: %v", err)
	}

	open := newClientResolver(nil, true, log)
	c, err := open.resolve(ctx, docURL)
	if err != nil || c.Name != "Doc" || !c.Document {
		t.Fatalf("document client: %+v %v", c, err)
	}
	for _, path := range []string{"/big.json", "/moved.json", "/secret.json", "/missing.json", "/"} {
		if _, err := open.fetch(ctx, srv.URL+path); err == nil {
			t.Errorf("%s was accepted", path)
		}
	}
}

func TestOAuthBox(t *testing.T) {
	b, err := newBox([]byte("secret"))
	must(t, err)
	sealed, err := b.seal(purposeRequest, authRequest{ClientID: "c"}, time.Minute)
	must(t, err)
	var got authRequest
	if err := b.open(purposeRequest, sealed, &got); err != nil || got.ClientID != "c" {
		t.Fatalf("open: %+v %v", got, err)
	}
	if b.open(purposeSession, sealed, &got) == nil {
		t.Error("a request opened as a login session")
	}
	if b.open(purposeRequest, sealed[:len(sealed)-2]+"AA", &got) == nil {
		t.Error("a tampered value opened")
	}
	other, _ := newBox([]byte("other secret"))
	if other.open(purposeRequest, sealed, &got) == nil {
		t.Error("opened under another secret")
	}
	b.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	if b.open(purposeRequest, sealed, &got) == nil {
		t.Error("an expired value opened")
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
	var m asMetadata
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
		var e oauthError
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
