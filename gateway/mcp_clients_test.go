package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/services/servicetest"
)

// bearerTransport adds an Authorization header to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestGoSDKClient runs the official Go SDK client against /mcp in both
// eras, with and without an API key: initialize (or discover), list, call.
func TestGoSDKClient(t *testing.T) {
	f := startFakes(t)
	url := startGateway(t, testConfig(t, f.url))
	for _, tc := range []struct {
		name, version, key string
	}{
		{"modern anonymous", "", ""},
		{"modern with key", "", keyGood},
		{"2025-11-25 anonymous", "2025-11-25", ""},
		{"2025-11-25 with key", "2025-11-25", keyGood},
		{"2025-03-26 with key", "2025-03-26", keyGood},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			hc := http.DefaultClient
			if tc.key != "" {
				hc = &http.Client{Transport: bearerTransport{tc.key}}
			}
			client := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc},
				&mcp.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer cs.Close()
			want := tc.version
			if want == "" {
				want = modernVersion
			}
			if got := cs.InitializeResult().ProtocolVersion; got != want {
				t.Errorf("negotiated %s, want %s", got, want)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			var names []string
			for _, tl := range tools.Tools {
				names = append(names, tl.Name)
			}
			if want := tc.key != ""; strings.Contains(strings.Join(names, ","), "private") != want {
				t.Errorf("tools %v (signed in: %v)", names, want)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if tx, ok := res.Content[0].(*mcp.TextContent); !ok || tx.Text != "hi" {
				t.Errorf("echo: %+v", res.Content)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
			if tc.key == "" {
				if err == nil {
					t.Fatalf("anonymous whoami succeeded: %+v", res)
				}
				return
			}
			if err != nil {
				t.Fatalf("whoami: %v", err)
			}
			if tx, ok := res.Content[0].(*mcp.TextContent); !ok || tx.Text != acctGood {
				t.Errorf("whoami: %+v", res.Content)
			}
		})
	}
}

// TestSessionsAcrossReplicas initializes on one gateway and calls on
// another that shares MCP_SESSION_KEYS, and checks key rotation.
func TestSessionsAcrossReplicas(t *testing.T) {
	f := startFakes(t)
	a := startGateway(t, testConfig(t, f.url))
	cfgB := testConfig(t, f.url)
	// B seals with a new key but still opens A's sessions.
	cfgB.MCPSessionKeys = []string{"ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=", testSecret}
	b := startGateway(t, cfgB)

	resp, _ := post(t, a, initBody)
	sid := resp.Header.Get(headerSessionID)
	for _, body := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b"}}}`} {
		resp, got := post(t, b, body, headerSessionID, sid)
		if resp.StatusCode != 200 || decode(t, got).Error != nil {
			t.Fatalf("on replica B: %d %s", resp.StatusCode, got)
		}
	}
	// B's new sessions do not open on A, which lacks B's new key: ping is
	// refused, tools/call tolerated.
	resp, _ = post(t, b, initBody)
	sidB := resp.Header.Get(headerSessionID)
	if resp, _ := post(t, a, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, headerSessionID, sidB); resp.StatusCode != 404 {
		t.Errorf("ping with an unknown key's session: %d, want 404", resp.StatusCode)
	}
	if resp, _ := post(t, a, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, headerSessionID, sidB); resp.StatusCode != 200 {
		t.Errorf("tools/list with an unknown session: %d, want 200", resp.StatusCode)
	}
	// DELETE on A ends the session on B too.
	if resp, _ := send(t, http.MethodDelete, a, "", headerSessionID, sid); resp.StatusCode != 204 {
		t.Fatalf("DELETE on A: %d", resp.StatusCode)
	}
	servicetest.Eventually(t, 5*time.Second, func() bool {
		resp, _ := post(t, b, listBody, headerSessionID, sid)
		return resp.StatusCode == 404
	}, "B refuses the session deleted on A")
}

// TestConnectorQuirks replays what the OpenAI and Anthropic connectors and
// other field clients send: no session id at all, no protocol version
// header (2025-03-26 assumed), notifications/initialized without a session,
// a stale session id, and a 2025-03-26 batch.
func TestConnectorQuirks(t *testing.T) {
	f := startFakes(t)
	url := startGateway(t, testConfig(t, f.url))
	steps := []struct {
		body   string
		hdr    []string
		status int
		want   string
	}{
		{`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"openai-mcp","version":"1.0.0"}}}`, nil, 200, `"protocolVersion":"2025-03-26"`},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil, 202, ""},
		{`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`, []string{headerSessionID, "stale-id"}, 202, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, nil, 200, `"name":"echo"`},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, []string{headerSessionID, "a3f9c2-from-another-gateway"}, 200, `"name":"echo"`},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"q"}}}`, []string{headerProtocolVersion, "2025-03-26"}, 200, `"text":"q"`},
		{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":null}}`, []string{headerSessionID, "stale-id"}, 200, `"content"`},
		{`[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":5,"method":"tools/list"},{"jsonrpc":"2.0","id":6,"method":"ping"}]`, nil, 200, `"id":6`},
		{`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"whoami","arguments":{}}}`, []string{"Authorization", "Bearer " + keyGood}, 200, acctGood},
	}
	for i, s := range steps {
		resp, b := post(t, url, s.body, s.hdr...)
		if resp.StatusCode != s.status || !strings.Contains(string(b), s.want) {
			t.Errorf("step %d: %d %s, want %d with %s", i, resp.StatusCode, b, s.status, s.want)
		}
	}
	var batch []json.RawMessage
	_, b := post(t, url, steps[7].body)
	if err := json.Unmarshal(b, &batch); err != nil || len(batch) != 2 {
		t.Errorf("batch reply %s", b)
	}
}

// TestRateLimit checks 429 with Retry-After per IP and per account.
func TestRateLimit(t *testing.T) {
	f := startFakes(t)
	cfg := testConfig(t, f.url)
	cfg.RateLimitIP, cfg.RateLimitAcct = 1, 1
	url := startGateway(t, cfg)
	for _, hdr := range [][]string{nil, {"Authorization", "Bearer " + keyGood}} {
		if resp, _ := post(t, url, listBody, hdr...); resp.StatusCode != 200 {
			t.Fatalf("first request: %d", resp.StatusCode)
		}
		resp, _ := post(t, url, listBody, hdr...)
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("second request: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	// Another account has its own budget.
	if resp, _ := post(t, url, listBody, "Authorization", "Bearer "+keyOther); resp.StatusCode != 200 {
		t.Errorf("other account: %d", resp.StatusCode)
	}
	// The account's budget is shared with /api.
	resp, _ := send(t, http.MethodGet, strings.TrimSuffix(url, "/mcp")+"/api/me", "", "Authorization", "Bearer "+keyGood)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("/api/me over the budget: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}
