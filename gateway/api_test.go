package gateway

import (
	"context"
	"io"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// TestWebStatic: the app is served from the binary under /app/ with its
// security headers, and / leads there.
func TestWebStatic(t *testing.T) {
	f := startFakes(t)
	base := "http://" + startService(t, testConfig(t, f.url)).Addr()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	cases := []struct {
		path     string
		code     int
		location string
		ctype    string
		body     string
	}{
		{"/", http.StatusFound, "/app/", "", ""},
		{"/app", http.StatusFound, "/app/", "", ""},
		{"/app/", http.StatusOK, "", "text/html; charset=utf-8", `<script type="module" src="js/main.js">`},
		{"/app/js/main.js", http.StatusOK, "", "text/javascript; charset=utf-8", "import"},
		{"/app/app.css", http.StatusOK, "", "text/css; charset=utf-8", ":root"},
		{"/app/icon.svg", http.StatusOK, "", "image/svg+xml", "<svg"},
		{"/app/nope.js", http.StatusNotFound, "", "", ""},
		{"/app/js/", http.StatusNotFound, "", "", ""}, // no folder listing
		{"/app/js/markdown.js", http.StatusOK, "", "text/javascript; charset=utf-8", "DOMPurify"},
		{"/app/vendor/marked/marked.esm.js", http.StatusOK, "", "text/javascript; charset=utf-8", "marked v18"},
		{"/app/vendor/dompurify/purify.es.js", http.StatusOK, "", "text/javascript; charset=utf-8", "DOMPurify"},
		{"/app/vendor/", http.StatusNotFound, "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			resp, err := noRedirect.Get(base + tc.path)
			must(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			must(t, err)
			if resp.StatusCode != tc.code || resp.Header.Get("Location") != tc.location {
				t.Fatalf("%d Location %q, want %d %q", resp.StatusCode, resp.Header.Get("Location"), tc.code, tc.location)
			}
			if tc.ctype != "" && resp.Header.Get("Content-Type") != tc.ctype {
				t.Errorf("Content-Type %q, want %q", resp.Header.Get("Content-Type"), tc.ctype)
			}
			if !strings.Contains(string(b), tc.body) {
				t.Errorf("body lacks %q", tc.body)
			}
			csp := resp.Header.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
				}
			}
			if strings.Contains(csp, "unsafe-") {
				t.Errorf("Content-Security-Policy %q allows unsafe sources", csp)
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("X-Frame-Options") != "DENY" {
				t.Errorf("headers %v", resp.Header)
			}
		})
	}
}

// TestWebNoCookieAuth: only a bearer token opens /api, never a cookie.
func TestWebNoCookieAuth(t *testing.T) {
	f := startFakes(t)
	base := "http://" + startService(t, testConfig(t, f.url)).Addr()
	for _, c := range []string{"token=" + keyGood, "session=" + keyGood, "Authorization=Bearer " + keyGood} {
		if resp, b := send(t, http.MethodGet, base+"/api/keys", "", "Cookie", c); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("cookie %q: %d %s", c, resp.StatusCode, b)
		}
	}
}

// TestWebSourcesAreCSPClean keeps the app within its policy and its
// escaping rule: no inline script, style or handler in the HTML, and no
// script that turns strings into markup or code.
func TestWebSourcesAreCSPClean(t *testing.T) {
	html := []*regexp.Regexp{
		regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>\s*[^<\s]`), // inline script
		regexp.MustCompile(`(?i)\son[a-z]+\s*=`),                // inline handler
		regexp.MustCompile(`(?i)\sstyle\s*=`),                   // inline style
		regexp.MustCompile(`(?i)<style`),
		regexp.MustCompile(`(?i)(src|href)\s*=\s*"(https?:)?//`), // another origin
	}
	js := []*regexp.Regexp{
		regexp.MustCompile(`\.(innerHTML|outerHTML)\b`),
		regexp.MustCompile(`insertAdjacentHTML|document\.write|\beval\(|new Function\(|createContextualFragment`),
		regexp.MustCompile(`\.style\.|setAttribute\(\s*"style"`),
		regexp.MustCompile(`https?://`),
	}
	scriptTag := regexp.MustCompile(`(?i)<script[^>]*>`)
	n := 0
	err := fs.WalkDir(webFiles, "web", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(webFiles, path)
		if err != nil {
			return err
		}
		var rules []*regexp.Regexp
		switch {
		case strings.HasPrefix(path, "web/vendor/"):
			// Vendored libraries (see web/vendor/README.md) build markup in
			// inert documents or style elements through the CSSOM by design;
			// only js/markdown.js and js/chart.js import them,
			// and each folder carries its licence.
			if d.Name() != "README.md" && !fileExists(webFiles, strings.TrimSuffix(path, d.Name())+"LICENSE") {
				t.Errorf("%s: no LICENSE next to it", path)
			}
		case strings.HasSuffix(path, ".html"):
			rules = html
		case strings.HasSuffix(path, ".js"):
			rules = js
			if path != "web/js/markdown.js" && path != "web/js/chart.js" && strings.Contains(string(b), "vendor/") {
				t.Errorf("%s imports a vendored library; only js/markdown.js and js/chart.js do", path)
			}
		}
		if strings.HasSuffix(path, ".html") {
			for _, tag := range scriptTag.FindAll(b, -1) {
				if !strings.Contains(string(tag), " src=") {
					t.Errorf("%s: %s has no src", path, tag)
				}
			}
		}
		for _, re := range rules {
			if m := re.Find(b); m != nil {
				t.Errorf("%s: %q breaks the page's policy (%s)", path, m, re)
			}
		}
		n++
		return nil
	})
	must(t, err)
	if n < 5 {
		t.Fatalf("walked %d files", n)
	}
}

func fileExists(fsys fs.FS, path string) bool {
	_, err := fs.Stat(fsys, path)
	return err == nil
}

func TestCheckJSONText(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string // "" means accepted
	}{
		{"plain", `{"question":"héllo 😀"}`, ""},
		{"escaped pair", `{"question":"\ud83d\ude00"}`, ""},
		{"escaped backslash before u", `{"question":"\\u0000 \\ud800"}`, ""},
		{"other escapes", `{"question":"a\"b\\c\n\t\u00e9"}`, ""},
		{"NUL", `{"question":"a\u0000b"}`, "NUL"},
		{"lone high, upper-case hex", `{"question":"\uDBFFx"}`, "unpaired"},
		{"lone high", `{"question":"\ud800"}`, "unpaired"},
		{"high then text", `{"question":"\ud800abcdef"}`, "unpaired"},
		{"high then high", `{"question":"\ud800\ud800"}`, "unpaired"},
		{"lone low", `{"question":"\udc00"}`, "unpaired"},
		{"high at end of a key", `{"\uD800":1}`, "unpaired"},
		{"invalid UTF-8", "{\"question\":\"\xff\xfe\"}", "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkJSONText([]byte(tt.doc))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !wire.IsCode(err, wire.InvalidArgument)):
				t.Fatalf("err = %v, want invalid_argument with %q", err, tt.want)
			}
		})
	}
}

func TestMapCodeTooLarge(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		http     int
		jsonrpc  int
		wantCode wire.Code
	}{
		{"too large", wire.TooLarge("request", 10, 5), http.StatusRequestEntityTooLarge, -32602, wire.ResourceExhausted},
		{"too large after the wire", &wire.Error{Code: wire.ResourceExhausted, Details: map[string]any{"reason": "too_large", "limit_bytes": 5.0}}, http.StatusRequestEntityTooLarge, -32602, wire.ResourceExhausted},
		{"rate limit", wire.Errorf(wire.ResourceExhausted, "slow down"), http.StatusTooManyRequests, -32603, wire.ResourceExhausted},
	}
	for _, tt := range tests {
		code, m := mapCode(tt.err)
		if code != tt.wantCode || m.HTTP != tt.http || m.JSONRPC != tt.jsonrpc {
			t.Errorf("%s: %s %+v, want %s %d %d", tt.name, code, m, tt.wantCode, tt.http, tt.jsonrpc)
		}
	}
}

// TestAPIErrorsHideInternals: /api error bodies never carry internal
// detail such as NATS subjects: an internal error is shown as its kind
// only, and a service that does not answer is named by its service.
func TestAPIErrorsHideInternals(t *testing.T) {
	f := startFakes(t)
	url := "http://" + startService(t, testConfig(t, f.url)).Addr() + "/api/me"
	resp, body := send(t, http.MethodGet, url, "", "Authorization", "Bearer "+keyGood)
	if resp.StatusCode != http.StatusServiceUnavailable || strings.Contains(string(body), "vfs.accounts") || !strings.Contains(string(body), "vfs service") {
		t.Errorf("no responders: %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Retry-After") != retryAfterUnavailable {
		t.Errorf("503 with Retry-After %q, want %s", resp.Header.Get("Retry-After"), retryAfterUnavailable)
	}
	acc, err := wire.NewService(f.nc, wire.ServiceOptions{Name: "vfs", Version: "0.0.1", Log: servicetest.Logger(t)})
	must(t, err)
	t.Cleanup(func() { _ = acc.Stop(context.Background()) })
	must(t, wire.Serve(acc, accounts.AccountsGet, func(context.Context, *accounts.AccountGetRequest) (*accounts.Account, error) {
		return nil, wire.Errorf(wire.Internal, "request to registry.tools.call failed")
	}))
	resp, body = send(t, http.MethodGet, url, "", "Authorization", "Bearer "+keyGood)
	if resp.StatusCode != http.StatusInternalServerError || strings.Contains(string(body), "registry.tools.call") || !strings.Contains(string(body), `"internal error"`) {
		t.Errorf("internal: %d %s", resp.StatusCode, body)
	}
}
