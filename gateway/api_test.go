package gateway

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mirobody/mirobody-go/gateway/internal/httpobs"
	"github.com/mirobody/mirobody-go/services/registry"
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

// TestHTTPMetrics: requests are counted by route template (never the raw
// path), method and status class.
func TestHTTPMetrics(t *testing.T) {
	f := startFakes(t)
	reg := prometheus.NewRegistry()
	s := New(Options{Config: testConfig(t, f.url), Log: servicetest.Logger(t), Metrics: reg})
	must(t, s.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
	})
	base := "http://" + s.Addr()
	tests := []struct {
		method, path, body string
		hdr                []string
		route              string
	}{
		{http.MethodGet, "/.well-known/oauth-protected-resource", "", nil, "/.well-known/oauth-protected-resource"},
		{http.MethodGet, "/api/sessions/s-123", "", []string{"Authorization", "Bearer " + keyGood}, "/api/sessions/:id"},
		{http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			[]string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}, "/mcp"},
		{http.MethodGet, "/no/such/path", "", nil, httpobs.UnmatchedRoute},
	}
	for _, tt := range tests {
		resp, _ := send(t, tt.method, base+tt.path, tt.body, tt.hdr...)
		status := strconv.Itoa(resp.StatusCode/100) + "xx"
		labels := map[string]string{"route": tt.route, "method": tt.method, "status": status}
		// The count is taken once the handler returns, which may be just
		// after the client has read the whole answer.
		servicetest.Eventually(t, 5*time.Second, func() bool {
			return counter(t, reg, "mirobody_http_requests_total", labels) == 1
		}, tt.method+" "+tt.path+" counted once as "+tt.route)
	}
	if got := counter(t, reg, "mirobody_http_requests_total", map[string]string{"route": "/api/sessions/s-123"}); got != 0 {
		t.Error("a raw path became a route label")
	}
}

// counter sums the counters name whose labels include labels.
func counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	must(t, err)
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue metrics
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// TestTraceIDInResponses: every response names its trace (traceparent and
// X-Request-Id, continuing the caller's trace when it sent one), error
// bodies of /api and /mcp quote it, and the NATS requests made for the
// request carry it as their request id.
func TestTraceIDInResponses(t *testing.T) {
	f := startFakes(t)
	base := "http://" + startService(t, testConfig(t, f.url)).Addr()
	const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	mcpHdr := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}
	tests := []struct {
		name, method, path, body string
		hdr                      []string
		wantTrace                string // "" means any fresh trace id
		bodyID                   func(b []byte) string
	}{
		{name: "ok", method: http.MethodGet, path: "/.well-known/oauth-protected-resource"},
		{name: "caller's trace", method: http.MethodGet, path: "/.well-known/oauth-protected-resource",
			hdr: []string{"traceparent", "00-" + callerTrace + "-00f067aa0ba902b7-01"}, wantTrace: callerTrace},
		{name: "api error", method: http.MethodGet, path: "/api/me", bodyID: func(b []byte) string {
			var e apiError
			_ = json.Unmarshal(b, &e)
			return e.RequestID
		}},
		{name: "json-rpc error", method: http.MethodPost, path: "/mcp", body: `{"jsonrpc":"2.0","id":1,"method":"nope/nope"}`, hdr: mcpHdr,
			bodyID: func(b []byte) string {
				var e struct {
					Error struct {
						Data struct {
							RequestID string `json:"requestId"`
						} `json:"data"`
					} `json:"error"`
				}
				_ = json.Unmarshal(b, &e)
				return e.Error.Data.RequestID
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := send(t, tt.method, base+tt.path, tt.body, tt.hdr...)
			id := resp.Header.Get(httpobs.HeaderRequestID)
			tp := resp.Header.Get("traceparent")
			if len(id) != 32 || !strings.HasPrefix(tp, "00-"+id+"-") {
				t.Fatalf("X-Request-Id %q, traceparent %q: want a trace id and the traceparent naming it", id, tp)
			}
			if tt.wantTrace != "" && id != tt.wantTrace {
				t.Errorf("trace id %s, want the caller's %s", id, tt.wantTrace)
			}
			if tt.bodyID != nil {
				if got := tt.bodyID(body); got != id {
					t.Errorf("error body %s quotes %q, want %s", body, got, id)
				}
			}
		})
	}

	seen := make(chan string, 4)
	sub, err := f.nc.Subscribe(registry.ToolsCall.Subject, func(m *nats.Msg) { seen <- m.Header.Get(wire.HeaderRequestID) })
	must(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	must(t, f.nc.Flush())
	resp, body := post(t, base+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`, mcpHdr...)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("tools/call = %d %s", resp.StatusCode, body)
	}
	select {
	case rid := <-seen:
		if want := resp.Header.Get(httpobs.HeaderRequestID); rid != want {
			t.Errorf("NATS request id %q, want the trace id %s", rid, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no registry call seen")
	}
}
