package stack

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// oauthDev is a dev stack (Dev, as `mirobody dev` starts it, on the test
// database) whose public URL is its real address, with an account that
// has a password for the login page.
type oauthDev struct {
	Base      string
	Email     string
	Password  string
	AccountID string
	Accounts  *accounts.Accounts
	// Config is the stack's configuration once started.
	Config *conf.Config
}

// startOAuthDev starts the dev stack serving the example tool my_account.
func startOAuthDev(t *testing.T) *oauthDev {
	t.Helper()
	return startOAuthDevLog(t, servicetest.Logger(t))
}

// startOAuthDevLog is startOAuthDev logging to log.
func startOAuthDevLog(t *testing.T, log *slog.Logger) *oauthDev {
	t.Helper()
	tools := t.TempDir()
	b, err := os.ReadFile(filepath.Join(fixtureTools, "examples.py"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(tools, "examples.py"), b, 0o644))
	addr := servicetest.FreeAddr(t)
	cfg := testConfig(t, "nats://"+servicetest.FreeAddr(t), servicetest.Postgres(t, nil).DSN)
	cfg.DevDir = t.TempDir()
	cfg.HTTPAddr, cfg.MCPPublicURL = addr, "http://"+addr
	cfg.MCPToolDirs = []string{tools}
	cfg.PythonWorkers = 1
	cfg.RateLimitAcct, cfg.RateLimitIP = 0, 0
	// Client ID Metadata Documents are served from loopback in the tests.
	cfg.MCPClientAllowPriv = true
	services, err := Dev(DevOptions{Config: cfg, Log: log, Out: io.Discard})
	must(t, err)
	startGroup(t, services...)
	return newOAuthAccount(t, cfg, "http://"+addr)
}

func newOAuthAccount(t *testing.T, cfg *conf.Config, base string) *oauthDev {
	t.Helper()
	// The dev stack's NATS knows only its identities: connect as the cli.
	nc, err := cliConn(cfg, "oauth-test", servicetest.Logger(t))
	must(t, err)
	t.Cleanup(nc.Close)
	accts := accounts.NewAccounts(wire.NewClient(wire.ClientOptions{Conn: nc}))
	d := &oauthDev{Base: base, Email: "oauth-user@example.com", Password: "correct horse battery", Accounts: accts, Config: cfg}
	a, err := accts.Create(context.Background(), &accounts.AccountCreateRequest{Email: d.Email, Password: d.Password})
	must(t, err)
	d.AccountID = a.ID
	return d
}

// userAgent is a cookie-keeping HTTP client that does not follow redirects,
// so the test sees each one as a user agent would.
type userAgent struct {
	t *testing.T
	c *http.Client
}

func newUserAgent(t *testing.T) *userAgent {
	t.Helper()
	jar, err := cookiejar.New(nil)
	must(t, err)
	return &userAgent{t: t, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *userAgent) do(req *http.Request) (*http.Response, string) {
	b.t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func (b *userAgent) get(u string) (*http.Response, string) {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	must(b.t, err)
	return b.do(req)
}

func (b *userAgent) post(u string, form url.Values) (*http.Response, string) {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	must(b.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

var hiddenRe = regexp.MustCompile(`<input type="hidden" name="([a-z]+)" value="([^"]*)">`)

// formOf returns the hidden fields of a page's form.
func formOf(t *testing.T, page string) url.Values {
	t.Helper()
	v := url.Values{}
	for _, m := range hiddenRe.FindAllStringSubmatch(page, -1) {
		v.Set(m[1], html.UnescapeString(m[2]))
	}
	if v.Get("request") == "" || v.Get("csrf") == "" {
		t.Fatalf("page has no form:\n%s", page)
	}
	return v
}

// signIn follows an authorization URL through the login and consent pages
// as a user who allows access, and returns where the server sends the
// browser back to.
func (b *userAgent) signIn(d *oauthDev, authURL string) *url.URL {
	b.t.Helper()
	resp, page := b.get(authURL)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `action="/oauth/login"`) {
		b.t.Fatalf("authorize: %d\n%s", resp.StatusCode, page)
	}
	form := formOf(b.t, page)
	form.Set("email", d.Email)
	form.Set("password", d.Password)
	resp, page = b.post(d.Base+"/oauth/login", form)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `action="/oauth/consent"`) {
		b.t.Fatalf("login: %d\n%s", resp.StatusCode, page)
	}
	return b.allow(d, page)
}

// allow answers a consent page with Allow.
func (b *userAgent) allow(d *oauthDev, page string) *url.URL {
	b.t.Helper()
	form := formOf(b.t, page)
	form.Set("action", "allow")
	resp, body := b.post(d.Base+"/oauth/consent", form)
	if resp.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("consent: %d\n%s", resp.StatusCode, body)
	}
	u, err := url.Parse(resp.Header.Get("Location"))
	must(b.t, err)
	return u
}

// pkce returns a code verifier and its S256 challenge.
func pkce() (verifier, challenge string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	verifier = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// postToken calls the token endpoint and decodes its JSON answer.
func postToken(t *testing.T, base string, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(base+"/oauth/token", form)
	must(t, err)
	defer resp.Body.Close()
	var m map[string]any
	must(t, json.NewDecoder(resp.Body).Decode(&m))
	if resp.StatusCode == http.StatusOK && resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("token response Cache-Control = %q", resp.Header.Get("Cache-Control"))
	}
	return resp.StatusCode, m
}

// callMyAccount calls my_account on /mcp with the given headers and
// returns the status and body.
func callMyAccount(t *testing.T, base string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"my_account","arguments":{}}}`))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
