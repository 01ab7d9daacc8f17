package gateway

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestInvalidTokenRateLimitedEveryRoute checks that a presented but invalid
// bearer token counts against the per-IP budget on every route, known or
// not, and that the route's own authentication does not verify it again.
func TestInvalidTokenRateLimitedEveryRoute(t *testing.T) {
	f := startFakes(t)
	routes := []struct {
		name, method, path, body string
		// first is the status of the requests within the budget (a burst
		// of two).
		first int
	}{
		{"mcp post", http.MethodPost, "/mcp", listBody, 401},
		{"mcp get", http.MethodGet, "/mcp", "", 401},
		{"mcp delete", http.MethodDelete, "/mcp", "", 401},
		{"api", http.MethodGet, "/api/me", "", 401},
		{"well-known", http.MethodGet, "/.well-known/oauth-protected-resource/mcp", "", 200},
		{"jwks", http.MethodGet, "/.well-known/jwks.json", "", 200},
		{"oauth", http.MethodGet, "/oauth/authorize", "", 400},
		{"unrouted", http.MethodGet, "/no/such/route", "", 404},
	}
	for _, rt := range routes {
		t.Run(rt.name, func(t *testing.T) {
			cfg := testConfig(t, f.url)
			cfg.RateLimitIP = 20 // a burst of two requests
			base := "http://" + startService(t, cfg).Addr()
			for i := range 2 {
				f.mu.Lock()
				before := f.verifies
				f.mu.Unlock()
				resp, b := send(t, rt.method, base+rt.path, rt.body, "Authorization", "Bearer mb_nope")
				if resp.StatusCode != rt.first {
					t.Fatalf("request %d: %d %s, want %d", i+1, resp.StatusCode, b, rt.first)
				}
				f.mu.Lock()
				verifies := f.verifies - before
				f.mu.Unlock()
				if verifies != 1 {
					t.Errorf("%d verifications of one token, want 1", verifies)
				}
			}
			resp, b := send(t, rt.method, base+rt.path, rt.body, "Authorization", "Bearer mb_nope")
			if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("second request: %d %s (Retry-After %q), want 429 with Retry-After", resp.StatusCode, b, resp.Header.Get("Retry-After"))
			}
			// /mcp answers in JSON-RPC, the rest in the API's error shape.
			var body map[string]any
			must(t, json.Unmarshal(b, &body))
			if _, rpc := body["jsonrpc"]; rpc != (rt.path == "/mcp") {
				t.Errorf("429 body %s: JSON-RPC is %v, want %v", b, rpc, rt.path == "/mcp")
			}
			// The budget is the IP's: an anonymous /mcp request is over it too.
			if resp, _ := post(t, base+"/mcp", listBody); resp.StatusCode != http.StatusTooManyRequests {
				t.Errorf("anonymous /mcp after the invalid tokens: %d, want 429", resp.StatusCode)
			}
		})
	}

	t.Run("valid tokens and no token are not counted", func(t *testing.T) {
		cfg := testConfig(t, f.url)
		cfg.RateLimitIP = 20
		base := "http://" + startService(t, cfg).Addr()
		for i := range 3 {
			for _, hdr := range [][]string{nil, {"Authorization", "Bearer " + keyGood}, {"Authorization", "Basic dXNlcjpwdw=="}} {
				if resp, b := send(t, http.MethodGet, base+"/.well-known/oauth-protected-resource", "", hdr...); resp.StatusCode != 200 {
					t.Fatalf("request %d %v: %d %s", i, hdr, resp.StatusCode, b)
				}
			}
		}
	})
}
