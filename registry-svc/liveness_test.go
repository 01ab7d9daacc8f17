package registrysvc

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/registry-svc/internal/builtin"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/servicetest"
)

// TestCallWhenReplicaDies runs two registry-svc replicas, each behind its
// own TCP proxy to NATS, and kills the one running a tools/call mid-call
// (its connections cut, as kill -9 would). A read-only tool is run again on
// the other replica; any other tool's call is answered with a tool error
// saying it may or may not have run. Both within about 2 s, where the
// caller used to wait for the whole 30 s.
func TestCallWhenReplicaDies(t *testing.T) {
	tests := []struct {
		tool      string
		wantAgain bool
	}{
		{"hang_read", true},
		{"hang_write", false},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			url := servicetest.NATS(t)
			var first atomic.Bool
			var calls atomic.Int32
			started := make(chan string, 1)
			release := make(chan struct{})
			proxies := map[string]*servicetest.Proxy{}
			for _, name := range []string{"a", "b"} {
				p := servicetest.NewProxy(t, strings.TrimPrefix(url, "nats://"))
				proxies[name] = p
				tools := hangTools(name, &first, &calls, started, release)
				s := New(Options{Config: testConfig(t, p.URL(), map[string]string{"MCP_TOOL_DIRS": "builtin", "TOOLS_WATCH": "false"}),
					Log: servicetest.Logger(t), Builtins: tools})
				if err := s.Start(context.Background()); err != nil {
					t.Fatalf("starting replica %s: %v", name, err)
				}
				// The killed replica cannot stop cleanly: its error is expected.
				t.Cleanup(func() { _ = s.Stop(context.Background()) })
			}
			// Registered last, so it runs first: the hung call ends and the
			// replicas stop without waiting for its deadline.
			t.Cleanup(func() { close(release) })
			client := registry.NewClient(servicetest.Client(t, url))
			type result struct {
				resp *registry.CallResponse
				err  error
			}
			done := make(chan result, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				resp, err := client.Call(ctx, &registry.CallRequest{Name: tt.tool, Arguments: json.RawMessage(`{}`), CallID: "c1"})
				done <- result{resp, err}
			}()
			victim := <-started
			killed := time.Now()
			proxies[victim].Kill()
			var res result
			select {
			case res = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("no answer 10 s after the replica died")
			}
			if took := time.Since(killed); took > 3*time.Second {
				t.Errorf("answered %s after the replica died, want < 3s", took)
			}
			if res.err != nil {
				t.Fatalf("err = %v, want a result", res.err)
			}
			text := string(res.resp.Content[0])
			if tt.wantAgain {
				if res.resp.IsError || strings.Contains(text, "replica "+victim) || calls.Load() != 2 {
					t.Errorf("got %s (error %v) after %d calls: want the other replica's answer", text, res.resp.IsError, calls.Load())
				}
				return
			}
			if !res.resp.IsError || !strings.Contains(text, "may or may not have run") {
				t.Errorf("got %s (error %v): want a tool error saying the call may or may not have run", text, res.resp.IsError)
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("%d calls ran, want 1: the tool is not safe to run again", n)
			}
		})
	}
}

// hangTools are one replica's built-ins: the first call to either, on any
// replica, hangs (until the test ends); the others answer at once
// with the replica's name.
func hangTools(replica string, first *atomic.Bool, calls *atomic.Int32, started chan<- string, release <-chan struct{}) []*builtin.Tool {
	call := func(ctx context.Context, _ *builtin.Request) (any, error) {
		calls.Add(1)
		if first.CompareAndSwap(false, true) {
			started <- replica
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil, ctx.Err()
		}
		return "replica " + replica, nil
	}
	schema := json.RawMessage(`{"type":"object"}`)
	return []*builtin.Tool{
		{Name: "hang_read", Description: "Reads.", InputSchema: schema, Annotations: json.RawMessage(`{"readOnlyHint":true}`), Call: call},
		{Name: "hang_write", Description: "Writes.", InputSchema: schema, Call: call},
	}
}
