package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/wire"
)

// TestToolCallDeadline: an /mcp tools/call reaches the registry with the
// tool's deadline (TOOL_TIMEOUT_S, or its TOOL_TIMEOUTS entry) plus the
// registry's reply margin, not the wire client's 30 s default.
func TestToolCallDeadline(t *testing.T) {
	f := startFakes(t)
	cfg := testConfig(t, f.url)
	cfg.ToolTimeoutS = 60
	cfg.ToolTimeouts = map[string]int{"slow": 7}
	url := startGateway(t, cfg)
	for i, tt := range []struct {
		tool, args string
		want       time.Duration
	}{
		{"echo", `{"text":"hi"}`, 60 * time.Second},
		{"slow", `{"ms":1}`, 7 * time.Second},
	} {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tt.tool + `","arguments":` + tt.args + `}}`
		before := time.Now()
		resp, b := post(t, url, body)
		after := time.Now()
		if resp.StatusCode != http.StatusOK || decode(t, b).Error != nil {
			t.Fatalf("%s: %d %s", tt.tool, resp.StatusCode, b)
		}
		f.mu.Lock()
		got := f.deadlines[i]
		f.mu.Unlock()
		want := tt.want + registry.ReplyMargin
		// The header carries milliseconds.
		if got.Before(before.Add(want).Add(-time.Millisecond)) || got.After(after.Add(want)) {
			t.Errorf("%s arrived with deadline now+%s, want now+%s", tt.tool, got.Sub(before).Round(time.Millisecond), want)
		}
	}
}

// TestToolCallTimeoutCancels: when the registry does not answer within the
// tool's deadline and margin, the gateway answers and tells the registry
// to cancel the call (registry.calls.cancel), so the tool host stops it.
func TestToolCallTimeoutCancels(t *testing.T) {
	f := startFakes(t)
	cfg := testConfig(t, f.url)
	cfg.ToolTimeoutS = 1
	url := startGateway(t, cfg)
	began := time.Now()
	// "block" ignores its deadline's margin: it runs until cancelled.
	_, b := post(t, url, `{"jsonrpc":"2.0","id":"t-1","method":"tools/call","params":{"name":"block"}}`)
	took := time.Since(began)
	callID := <-f.started
	if r := decode(t, b); r.Error == nil || r.Error.Code != -32603 {
		t.Errorf("reply %s, want a deadline error", b)
	}
	if want := time.Second + registry.ReplyMargin; took < want || took > want+2*time.Second {
		t.Errorf("the call took %s, want about %s", took, want)
	}
	servicetest.Eventually(t, 5*time.Second, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, ev := range f.cancels {
			if ev.CallID == callID && ev.Reason == "timed out" {
				return true
			}
		}
		return false
	}, "the timed-out call was not cancelled")
}

// TestToolOutlivesWireDefault: a tool that runs longer than the wire
// client's default deadline but within TOOL_TIMEOUT_S succeeds over /mcp
// (the scaled-down form of a 40 s tool under TOOL_TIMEOUT_S=60 against
// the 30 s default).
func TestToolOutlivesWireDefault(t *testing.T) {
	f := startFakes(t)
	client := wire.NewClient(wire.ClientOptions{Conn: f.nc, DefaultTimeout: 2 * time.Second})
	srv := httptest.NewServer(testMCPWith(t, f, client, 5*time.Second))
	t.Cleanup(srv.Close)
	resp, b := post(t, srv.URL+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":3000}}}`)
	if r := decode(t, b); resp.StatusCode != http.StatusOK || r.Error != nil || !strings.Contains(string(r.Result), "slow done") {
		t.Fatalf("a 3 s tool under TOOL_TIMEOUT_S=5 with a 2 s wire default: %d %s", resp.StatusCode, b)
	}
}
