package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/wire"
)

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
			id := resp.Header.Get(headerRequestID)
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
		if want := resp.Header.Get(headerRequestID); rid != want {
			t.Errorf("NATS request id %q, want the trace id %s", rid, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no registry call seen")
	}
}
