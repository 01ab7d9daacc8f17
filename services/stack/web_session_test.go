package stack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
)

// webLogin posts email and password to /api/session/login with b.
func webLogin(b *userAgent, base, email, password string) (*http.Response, map[string]string) {
	b.t.Helper()
	body, err := json.Marshal(map[string]string{"email": email, "password": password})
	must(b.t, err)
	req, err := http.NewRequest(http.MethodPost, base+"/api/session/login", strings.NewReader(string(body)))
	must(b.t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, page := b.do(req)
	out := map[string]string{}
	_ = json.Unmarshal([]byte(page), &out)
	return resp, out
}

// apiReq sends an /api request with b's cookies and the given headers.
func apiReq(b *userAgent, method, u, body string, hdr ...string) (*http.Response, string) {
	b.t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	must(b.t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return b.do(req)
}

// TestWebSessionCookie (issue 18, sign-in): the password sign-in sets an
// HttpOnly, SameSite=Strict cookie for /api; it reads /api, but a request
// that changes state without the CSRF header is refused (authn's tests
// show it never opens /mcp); sign-out ends it on the server, so the replayed cookie is 401.
func TestWebSessionCookie(t *testing.T) {
	d := startOAuthDev(t)
	b := newUserAgent(t)
	resp, sess := webLogin(b, d.Base, d.Email, d.Password)
	if resp.StatusCode != http.StatusOK || sess["csrf"] == "" || sess["account_id"] != d.AccountID {
		t.Fatalf("login: %d %v", resp.StatusCode, sess)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "mirobody_web" {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/api" {
		t.Fatalf("cookie %+v", cookie)
	}
	if resp, body := apiReq(b, http.MethodGet, d.Base+"/api/me", ""); resp.StatusCode != http.StatusOK || !strings.Contains(body, d.Email) {
		t.Fatalf("GET /api/me: %d %s", resp.StatusCode, body)
	}
	if resp, body := apiReq(b, http.MethodGet, d.Base+"/api/session", ""); resp.StatusCode != http.StatusOK || !strings.Contains(body, sess["csrf"]) {
		t.Fatalf("GET /api/session: %d %s", resp.StatusCode, body)
	}
	keys := d.Base + "/api/keys"
	for _, tc := range []struct {
		name string
		hdr  []string
		code int
	}{
		{"no CSRF header", nil, http.StatusForbidden},
		{"wrong CSRF header", []string{"X-CSRF-Token", "forged"}, http.StatusForbidden},
		{"CSRF header", []string{"X-CSRF-Token", sess["csrf"]}, http.StatusCreated},
	} {
		if resp, body := apiReq(b, http.MethodPost, keys, `{"name":"web","scopes":["api"]}`, tc.hdr...); resp.StatusCode != tc.code {
			t.Errorf("POST /api/keys with %s: %d, want %d: %s", tc.name, resp.StatusCode, tc.code, body)
		}
	}
	if resp, body := apiReq(b, http.MethodPost, d.Base+"/api/session/logout", "", "X-CSRF-Token", sess["csrf"]); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("logout: %d %s", resp.StatusCode, body)
	}
	replay := newUserAgent(t)
	if resp, body := apiReq(replay, http.MethodGet, d.Base+"/api/me", "", "Cookie", cookie.Name+"="+cookie.Value); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the replayed cookie after sign-out: %d %s", resp.StatusCode, body)
	}
}

// TestWebSessionLockout (issue 18, sign-in): the web sign-in shares the
// OAuth login page's lockout: five wrong passwords, then even the right
// one is a 429 with Retry-After, on the login page too.
func TestWebSessionLockout(t *testing.T) {
	d := startOAuthDev(t)
	for i := range 5 {
		if resp, out := webLogin(newUserAgent(t), d.Base, d.Email, "wrong"); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong password %d: %d %v", i+1, resp.StatusCode, out)
		}
	}
	resp, out := webLogin(newUserAgent(t), d.Base, d.Email, d.Password)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("the sixth attempt: %d Retry-After %q %v", resp.StatusCode, resp.Header.Get("Retry-After"), out)
	}
	if resp, out := webLogin(newUserAgent(t), d.Base, "someone-else@example.com", "x"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("another email: %d %v", resp.StatusCode, out)
	}
}

// TestModelLists (issue 18, model choice): /api/agents and
// /api/providers name the agents' providers with their types and models
// and mark the defaults, and carry neither keys nor base URLs.
func TestModelLists(t *testing.T) {
	srv := scripted.New(func(*scripted.Received) (scripted.Step, error) { return scripted.Step{Text: "ok"}, nil })
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, func(c *conf.Config) { c.ProviderKeys = map[string]string{"OPENAI_API_KEY": "sk-never-shown"} })
	code, body := httpGet(t, st.URL+"/api/agents", st.Key)
	var agents agent.ProvidersResponse
	if code != http.StatusOK || json.Unmarshal(body, &agents) != nil || len(agents.Agents) != 2 {
		t.Fatalf("GET /api/agents: %d %s", code, body)
	}
	if a := agents.Agents[0]; a.Name != agent.AgentDeep || !a.Default || len(a.Providers) != 2 ||
		fmt.Sprint(a.Providers[0]) != fmt.Sprint(agent.ProviderInfo{Name: "an", Type: "anthropic", Model: "claude-test", Models: []string{"claude-test"}, Default: true, Ready: true}) {
		t.Errorf("deep: %+v", a)
	}
	for _, tc := range []struct {
		query, want string
		code        int
	}{
		{"", `"agent":"deep"`, http.StatusOK},
		{"?agent=base", `{"name":"anthropic","type":"anthropic","model":"claude-sonnet-4-5","models":["claude-sonnet-4-5"],"ready":false}`, http.StatusOK},
		{"?agent=base", `{"name":"openai","type":"openai-responses","model":"gpt-4.1-mini","models":["gpt-4.1-mini"],"default":true,"ready":true}`, http.StatusOK},
		{"?agent=nope", "agent must be deep or base", http.StatusBadRequest},
	} {
		code, body := httpGet(t, st.URL+"/api/providers"+tc.query, st.Key)
		if code != tc.code || !strings.Contains(string(body), tc.want) {
			t.Errorf("GET /api/providers%s: %d %s, want %d with %s", tc.query, code, body, tc.code, tc.want)
		}
	}
	for _, secret := range []string{"sk-never-shown", "127.0.0.1", "OPENAI_API_KEY"} {
		if strings.Contains(string(body), secret) {
			t.Errorf("/api/agents shows %q: %s", secret, body)
		}
	}
}
