package stack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/gateway"
	"github.com/mirobody/mirobody-go/services/servicetest"
)

// registerClient registers a public client by RFC 7591 and returns its id.
func registerClient(t *testing.T, base string, redirects ...string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"client_name": "Flow Test", "redirect_uris": redirects,
		"grant_types": []string{"authorization_code", "refresh_token"}, "token_endpoint_auth_method": "none"})
	resp, err := http.Post(base+"/oauth/register", "application/json", bytes.NewReader(body))
	must(t, err)
	defer resp.Body.Close()
	var m map[string]any
	must(t, json.NewDecoder(resp.Body).Decode(&m))
	id, _ := m["client_id"].(string)
	if resp.StatusCode != http.StatusCreated || id == "" || m["token_endpoint_auth_method"] != "none" {
		t.Fatalf("register: %d %v", resp.StatusCode, m)
	}
	return id
}

// authURL builds an authorization request; extra overrides parameters
// ("" deletes one).
func authURL(base, client, redirect, challenge string, extra ...string) string {
	q := url.Values{"response_type": {"code"}, "client_id": {client}, "redirect_uri": {redirect}, "state": {"st-1"},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "scope": {"mcp"}, "resource": {base + "/mcp"}}
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] == "" {
			q.Del(extra[i])
		} else {
			q.Set(extra[i], extra[i+1])
		}
	}
	return base + "/oauth/authorize?" + q.Encode()
}

// TestOAuthFlow runs the authorization code flow as a browser and a public
// client do, on the dev stack, with every refusal the issue lists: PKCE
// failure, wrong redirect, replayed code, wrong audience (resource), refresh
// reuse, revocation, and a web session that never reaches /mcp.
func TestOAuthFlow(t *testing.T) {
	d := startOAuthDev(t)
	base := d.Base
	const redirect = "http://127.0.0.1:9/callback"
	client := registerClient(t, base, redirect)

	// Discovery: the protected resource names us, and our metadata is RFC 8414.
	code, body := httpGet(t, base+"/.well-known/oauth-protected-resource/mcp", "")
	if code != 200 || !strings.Contains(string(body), `"authorization_servers":["`+base+`"]`) {
		t.Fatalf("PRM: %d %s", code, body)
	}
	code, body = httpGet(t, base+"/.well-known/oauth-authorization-server", "")
	var meta map[string]any
	must(t, json.Unmarshal(body, &meta))
	if code != 200 || meta["issuer"] != base || meta["authorization_response_iss_parameter_supported"] != true {
		t.Fatalf("AS metadata: %d %s", code, body)
	}

	b := newUserAgent(t)
	verifier, challenge := pkce()
	// Any loopback port is the registered redirect (RFC 8252 §7.3).
	native := "http://127.0.0.1:54321/callback"
	back := b.signIn(d, authURL(base, client, native, challenge))
	q := back.Query()
	if back.Host != "127.0.0.1:54321" || q.Get("state") != "st-1" || q.Get("iss") != base || q.Get("code") == "" {
		t.Fatalf("authorization response: %s", back)
	}
	authCode := q.Get("code")
	exchange := func(code, verifier, redirect string, extra ...string) (int, map[string]any) {
		f := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
			"redirect_uri": {redirect}, "client_id": {client}, "resource": {base + "/mcp"}}
		for i := 0; i+1 < len(extra); i += 2 {
			f.Set(extra[i], extra[i+1])
		}
		return postToken(t, base, f)
	}
	st, tok := exchange(authCode, verifier, native)
	if st != 200 || tok["token_type"] != "Bearer" || tok["scope"] != "mcp" || tok["expires_in"] != float64(3600) {
		t.Fatalf("token: %d %v", st, tok)
	}
	access, refresh := tok["access_token"].(string), tok["refresh_token"].(string)

	// The access token works on /mcp as the account.
	if st, out := callMyAccount(t, base, "Authorization", "Bearer "+access); st != 200 || !strings.Contains(out, "account "+d.AccountID) {
		t.Fatalf("my_account with the access token: %d %s", st, out)
	}
	// Another gateway replica (same vfs-svc, same SECRET_KEY) opens the
	// stored signing key: it accepts the token and serves the same JWKS.
	c2 := *d.Config
	c2.HTTPAddr = "127.0.0.1:0"
	gw2 := gateway.New(gateway.Options{Config: &c2, Log: servicetest.Logger(t)})
	startGroup(t, gw2)
	if st, out := callMyAccount(t, "http://"+gw2.Addr(), "Authorization", "Bearer "+access); st != 200 || !strings.Contains(out, "account "+d.AccountID) {
		t.Fatalf("my_account on a second replica: %d %s", st, out)
	}
	_, jwks1 := httpGet(t, base+"/.well-known/jwks.json", "")
	_, jwks2 := httpGet(t, "http://"+gw2.Addr()+"/.well-known/jwks.json", "")
	if !bytes.Equal(jwks1, jwks2) || !bytes.Contains(jwks1, []byte(`"crv":"Ed25519"`)) {
		t.Errorf("replicas serve different JWKS:\n%s\n%s", jwks1, jwks2)
	}

	// A replica whose SECRET_KEY changed cannot open the stored key: it
	// makes a new one, and keeps the old public key in its JWKS.
	c3 := *d.Config
	c3.HTTPAddr, c3.SecretKey = "127.0.0.1:0", "another secret key"
	gw3 := gateway.New(gateway.Options{Config: &c3, Log: servicetest.Logger(t)})
	startGroup(t, gw3)
	var set1, set3 struct{ Keys []struct{ Kid string } }
	_, jwks3 := httpGet(t, "http://"+gw3.Addr()+"/.well-known/jwks.json", "")
	must(t, json.Unmarshal(jwks1, &set1))
	must(t, json.Unmarshal(jwks3, &set3))
	if len(set1.Keys) != 1 || len(set3.Keys) != 2 || set3.Keys[1].Kid != set1.Keys[0].Kid {
		t.Errorf("JWKS after a SECRET_KEY change: %s, before: %s", jwks3, jwks1)
	}

	// The login cookie never authenticates /mcp or /api.
	u, _ := url.Parse(base + "/oauth/authorize")
	var cookies []string
	for _, c := range b.c.Jar.Cookies(u) {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	if len(cookies) < 2 {
		t.Fatalf("userAgent holds cookies %v, want session and csrf", cookies)
	}
	if st, out := callMyAccount(t, base, "Cookie", strings.Join(cookies, "; ")); st != 401 {
		t.Errorf("my_account with the login cookie: %d %s", st, out)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/api/me", nil)
	req.Header.Set("Cookie", strings.Join(cookies, "; "))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Errorf("/api/me with the login cookie: %v %v", resp.StatusCode, err)
	}
	// An OAuth token is for /mcp only: /api wants scope api.
	if st, out := httpGet(t, base+"/api/me", access); st != 403 {
		t.Errorf("/api/me with an OAuth token: %d %s", st, out)
	}

	t.Run("refused authorization requests", func(t *testing.T) {
		// The browser is signed in now: a good request gets the consent page.
		_, challenge := pkce()
		cases := []struct {
			name  string
			url   string
			page  int    // the error stays on our page with this status
			error string // or goes back to the client with this error
		}{
			{"unknown client", authURL(base, "no-such-client", redirect, challenge), 400, ""},
			{"unregistered redirect", authURL(base, client, "http://127.0.0.1:9/elsewhere", challenge), 400, ""},
			{"redirect on another host", authURL(base, client, "https://evil.example/callback", challenge), 400, ""},
			{"no PKCE", authURL(base, client, redirect, challenge, "code_challenge", ""), 0, "invalid_request"},
			{"plain PKCE", authURL(base, client, redirect, challenge, "code_challenge_method", "plain"), 0, "invalid_request"},
			{"implicit grant", authURL(base, client, redirect, challenge, "response_type", "token"), 0, "unsupported_response_type"},
			{"unknown scope", authURL(base, client, redirect, challenge, "scope", "admin"), 0, "invalid_scope"},
			{"wrong audience", authURL(base, client, redirect, challenge, "resource", "https://other.example/mcp"), 0, "invalid_target"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				resp, page := b.get(tc.url)
				if tc.page != 0 {
					if resp.StatusCode != tc.page || resp.Header.Get("Location") != "" {
						t.Fatalf("%d %q\n%s", resp.StatusCode, resp.Header.Get("Location"), page)
					}
					return
				}
				loc, err := url.Parse(resp.Header.Get("Location"))
				if resp.StatusCode != http.StatusFound || err != nil || loc.Query().Get("error") != tc.error ||
					loc.Query().Get("iss") != base || loc.Query().Get("state") != "st-1" {
					t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Location"))
				}
			})
		}
	})

	t.Run("refused token requests", func(t *testing.T) {
		// A replayed code is refused, and revokes what the code issued.
		if st, m := exchange(authCode, verifier, native); st != 400 || m["error"] != "invalid_grant" {
			t.Errorf("replayed code: %d %v", st, m)
		}
		if st, m := postToken(t, base, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {client}}); st != 400 || m["error"] != "invalid_grant" {
			t.Errorf("refresh after a replayed code: %d %v", st, m)
		}
		fresh := func() (code, verifier string) {
			t.Helper()
			v, ch := pkce()
			resp, page := b.get(authURL(base, client, redirect, ch))
			if resp.StatusCode != 200 {
				t.Fatalf("authorize: %d %s", resp.StatusCode, page)
			}
			return b.allow(d, page).Query().Get("code"), v
		}
		c, _ := fresh()
		if st, m := exchange(c, "wrong-verifier-wrong-verifier-wrong-verifier-00", redirect); st != 400 || m["error"] != "invalid_grant" {
			t.Errorf("PKCE failure: %d %v", st, m)
		}
		c, v := fresh()
		if st, m := exchange(c, v, "http://127.0.0.1:9/other"); st != 400 || m["error"] != "invalid_grant" {
			t.Errorf("wrong redirect at the token endpoint: %d %v", st, m)
		}
		c, v = fresh()
		if st, m := exchange(c, v, redirect, "resource", "https://other.example/mcp"); st != 400 || m["error"] != "invalid_target" {
			t.Errorf("wrong resource at the token endpoint: %d %v", st, m)
		}
		c, v = fresh()
		if st, m := exchange(c, v, redirect, "client_id", "someone-else"); st != 400 || m["error"] != "invalid_grant" {
			t.Errorf("another client's code: %d %v", st, m)
		}
		if st, m := postToken(t, base, url.Values{"grant_type": {"password"}}); st != 400 || m["error"] != "unsupported_grant_type" {
			t.Errorf("password grant: %d %v", st, m)
		}
	})

	t.Run("refresh rotation, reuse and revocation", func(t *testing.T) {
		v, ch := pkce()
		resp, page := b.get(authURL(base, client, redirect, ch))
		if resp.StatusCode != 200 {
			t.Fatalf("authorize: %d", resp.StatusCode)
		}
		st, tok := exchange(b.allow(d, page).Query().Get("code"), v, redirect)
		if st != 200 {
			t.Fatalf("token: %d %v", st, tok)
		}
		rt1 := tok["refresh_token"].(string)
		refreshWith := func(rt string) (int, map[string]any) {
			return postToken(t, base, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {client}})
		}
		st, tok2 := refreshWith(rt1)
		if st != 200 || tok2["refresh_token"] == rt1 {
			t.Fatalf("rotation: %d %v", st, tok2)
		}
		rt2 := tok2["refresh_token"].(string)
		if st, out := callMyAccount(t, base, "Authorization", "Bearer "+tok2["access_token"].(string)); st != 200 {
			t.Fatalf("refreshed access token: %d %s", st, out)
		}
		// Reuse of the spent token revokes the family, the new one too.
		if st, m := refreshWith(rt1); st != 400 || m["error"] != "invalid_grant" {
			t.Errorf("reused refresh token: %d %v", st, m)
		}
		if st, m := refreshWith(rt2); st != 400 || m["error"] != "invalid_grant" {
			t.Errorf("refresh token of a revoked family: %d %v", st, m)
		}

		// RFC 7009: revoking the access token refuses it on /mcp at once.
		at := tok2["access_token"].(string)
		resp, err := http.PostForm(base+"/oauth/revoke", url.Values{"token": {at}, "client_id": {client}})
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("revoke: %d", resp.StatusCode)
		}
		if st, out := callMyAccount(t, base, "Authorization", "Bearer "+at); st != 401 || !strings.Contains(out, "unauthorized") {
			t.Errorf("revoked access token: %d %s", st, out)
		}
		resp, err = http.PostForm(base+"/oauth/revoke", url.Values{"token": {"mbr_unknown"}})
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("revoking an unknown token: %d", resp.StatusCode)
		}
	})

	t.Run("pages", func(t *testing.T) {
		fresh := newUserAgent(t)
		_, ch := pkce()
		resp, page := fresh.get(authURL(base, client, redirect, ch))
		if resp.StatusCode != 200 || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Fatalf("login page: %d %v", resp.StatusCode, resp.Header)
		}
		form := formOf(t, page)
		form.Set("email", d.Email)
		form.Set("password", "wrong password")
		if resp, page := fresh.post(base+"/oauth/login", form); resp.StatusCode != 401 || !strings.Contains(page, "Wrong email or password") {
			t.Errorf("wrong password: %d", resp.StatusCode)
		}
		form.Set("password", d.Password)
		form.Set("csrf", "forged")
		if resp, _ := fresh.post(base+"/oauth/login", form); resp.StatusCode != 403 {
			t.Errorf("forged CSRF token: %d", resp.StatusCode)
		}
		// A cross-site post carries no cookie at all (SameSite=Lax).
		f := formOf(t, page)
		f.Set("action", "allow")
		if resp, err := http.PostForm(base+"/oauth/consent", f); err != nil || resp.StatusCode != 403 {
			t.Errorf("consent without cookies: %v %v", resp.StatusCode, err)
		}
	})

	t.Run("client ID metadata document", func(t *testing.T) {
		var docURL string
		mux := http.NewServeMux()
		mux.HandleFunc("/client.json", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"client_id":%q,"client_name":"Doc Client","redirect_uris":[%q],"token_endpoint_auth_method":"none"}`, docURL, redirect)
		})
		mux.HandleFunc("/liar.json", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, `{"client_id":"https://someone.else/client.json","redirect_uris":[%q]}`, redirect)
		})
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		docURL = srv.URL + "/client.json"
		v, ch := pkce()
		resp, page := b.get(authURL(base, docURL, redirect, ch))
		if resp.StatusCode != 200 || !strings.Contains(page, "Doc Client") || !strings.Contains(page, "from "+strings.TrimPrefix(srv.URL, "http://")) {
			t.Fatalf("consent for a document client: %d\n%s", resp.StatusCode, page)
		}
		st, tok := postToken(t, base, url.Values{"grant_type": {"authorization_code"}, "code": {b.allow(d, page).Query().Get("code")},
			"code_verifier": {v}, "redirect_uri": {redirect}, "client_id": {docURL}})
		if st != 200 {
			t.Fatalf("token for a document client: %d %v", st, tok)
		}
		if resp, _ := b.get(authURL(base, srv.URL+"/liar.json", redirect, ch)); resp.StatusCode != 400 {
			t.Errorf("document naming another client_id: %d", resp.StatusCode)
		}
	})
}

// TestOAuthTSClient is the "done when": the official TypeScript SDK
// client, holding no API key, completes OAuth against the dev stack through
// its OAuthClientProvider and calls a tool as the signed-in user, then
// refreshes a dead access token by itself.
func TestOAuthTSClient(t *testing.T) {
	d := startOAuthDev(t)
	node, dir := nodeTools(t)
	// Node resolves the SDK from the script's folder: it runs from the cache.
	script := filepath.Join(dir, "ts-oauth.mjs")
	src, err := os.ReadFile("testdata/ts-oauth.mjs")
	must(t, err)
	must(t, os.WriteFile(script, src, 0o644))
	out := runNode(t, dir, node, 0, script, d.Base+"/mcp", d.Email, d.Password)
	var got struct {
		Unauthorized bool
		Account      string
		Refreshed    string
		Tools        int
	}
	if err := json.Unmarshal(lastLine(out), &got); err != nil {
		t.Fatalf("script output %s: %v", out, err)
	}
	want := "account " + d.AccountID
	if !got.Unauthorized || got.Account != want || got.Refreshed != want || got.Tools == 0 {
		t.Fatalf("got %+v, want the SDK refused, then %q twice\n%s", got, want, out)
	}
}

// TestOAuthConformance runs the conformance suite's authorization server
// scenarios (metadata, authorization code grant) against the dev stack.
// The suite prints the authorization URL for a human; the test plays the
// browser: signs in, allows, and follows the redirect to the suite's
// callback listener.
func TestOAuthConformance(t *testing.T) {
	d := startOAuthDev(t)
	node, dir := nodeTools(t)
	port := servicetest.FreePort(t)
	client := registerClient(t, d.Base, "http://127.0.0.1:"+port+"/callback")
	suite := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, suite, "authorization", "--url", d.Base, "--client-id", client,
		"--resource", d.Base+"/mcp", "--port", port, "-o", t.TempDir())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	must(t, cmd.Start())
	var out bytes.Buffer
	sc := bufio.NewScanner(stdout)
	b := newUserAgent(t)
	// The suite announces its callback listener after the URL: the browser
	// goes back only once both lines are seen.
	var back *url.URL
	listening := false
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		switch {
		case strings.HasPrefix(line, d.Base+"/oauth/authorize?"):
			back = b.signIn(d, line)
		case strings.HasPrefix(line, "Callback server started"):
			listening = true
		}
		if back != nil && listening {
			if resp, body := b.get(back.String()); resp.StatusCode != 200 {
				t.Errorf("suite callback: %d %s", resp.StatusCode, body)
			}
			back = nil
		}
	}
	err = cmd.Wait()
	t.Logf("conformance authorization:\n%s%s", out.Bytes(), errOut.Bytes())
	if err != nil {
		t.Fatalf("conformance authorization failed: %v", err)
	}
	for _, want := range []string{"authorization-server-metadata-endpoint", "authorization-code-grant", " 0 failed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output names no %s", want)
		}
	}
}
