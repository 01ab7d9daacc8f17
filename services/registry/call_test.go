package registry_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/wire"
)

// replicas stands in for registry-svc replicas: the first tools/call any
// of them receives blocks until the test kills its replica; the others
// answer with the replica's name. The list gives each test tool its
// annotations.
type replicas struct {
	url     string
	first   atomic.Bool
	calls   atomic.Int32
	started chan string
	release chan struct{}
}

var testTools = []registry.Tool{
	{Name: "fetch", InputSchema: json.RawMessage(`{}`), Annotations: json.RawMessage(`{"readOnlyHint":true}`)},
	{Name: "put", InputSchema: json.RawMessage(`{}`), Annotations: json.RawMessage(`{"readOnlyHint":false,"idempotentHint":true}`)},
	{Name: "send", InputSchema: json.RawMessage(`{}`)},
}

func (r *replicas) start(t *testing.T, name string) *nats.Conn {
	t.Helper()
	nc := servicetest.Conn(t, r.url)
	s, err := wire.NewService(nc, wire.ServiceOptions{Name: "registry", Version: "0.1.0", Log: servicetest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	t.Cleanup(func() {
		select {
		case <-r.release:
		default:
			close(r.release)
		}
	})
	if err := wire.Serve(s, registry.ToolsList, func(context.Context, *registry.ListRequest) (*registry.ListResponse, error) {
		return &registry.ListResponse{Tools: testTools, Revision: "1"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := wire.Serve(s, registry.ToolsCall, func(ctx context.Context, req *registry.CallRequest) (*registry.CallResponse, error) {
		r.calls.Add(1)
		if r.first.CompareAndSwap(false, true) {
			r.started <- name
			select {
			case <-r.release:
			case <-ctx.Done():
			}
		}
		text, _ := json.Marshal(map[string]string{"type": "text", "text": name})
		return &registry.CallResponse{Content: []json.RawMessage{text}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	return nc
}

// TestCallWhenReplicaDies: the registry replica running a call dies. A
// read-only or idempotent tool is called again and answered by the other
// replica; any other tool is answered with a tool error saying it may or
// may not have run. Both within about the liveness window, not the call's
// 30 s deadline.
func TestCallWhenReplicaDies(t *testing.T) {
	tests := []struct {
		tool      string
		wantAgain bool
	}{
		{"fetch", true},
		{"put", true},
		{"send", false},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			r := &replicas{url: servicetest.NATS(t), started: make(chan string, 1), release: make(chan struct{})}
			conns := map[string]*nats.Conn{"a": r.start(t, "a"), "b": r.start(t, "b")}
			client := registry.NewClient(servicetest.Client(t, r.url))
			type result struct {
				resp *registry.CallResponse
				err  error
			}
			done := make(chan result, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				resp, err := client.Call(ctx, &registry.CallRequest{Caller: registry.Caller{AccountID: "acct"}, Name: tt.tool, CallID: "c1"})
				done <- result{resp, err}
			}()
			victim := <-r.started
			killed := time.Now()
			conns[victim].Close()
			res := <-done
			if took := time.Since(killed); took > 3*time.Second {
				t.Errorf("answered %s after the replica died, want < 3s", took)
			}
			if res.err != nil {
				t.Fatalf("err = %v, want a result", res.err)
			}
			text := string(res.resp.Content[0])
			if tt.wantAgain {
				if res.resp.IsError || strings.Contains(text, `"`+victim+`"`) || r.calls.Load() != 2 {
					t.Errorf("got %s (error %v) after %d calls: want the other replica's answer", text, res.resp.IsError, r.calls.Load())
				}
				return
			}
			if !res.resp.IsError || !strings.Contains(text, "may or may not have run") || !strings.Contains(text, tt.tool) {
				t.Errorf("got %s (error %v): want a tool error saying %s may or may not have run", text, res.resp.IsError, tt.tool)
			}
			if n := r.calls.Load(); n != 1 {
				t.Errorf("%d calls reached a replica, want 1: the tool is not safe to run again", n)
			}
		})
	}
}

func TestRepeatable(t *testing.T) {
	tests := []struct {
		annotations string
		want        bool
	}{
		{``, false},
		{`{}`, false},
		{`{"readOnlyHint":true}`, true},
		{`{"idempotentHint":true}`, true},
		{`{"readOnlyHint":false,"destructiveHint":true}`, false},
		{`not json`, false},
	}
	for _, tt := range tests {
		if got := registry.Repeatable(json.RawMessage(tt.annotations)); got != tt.want {
			t.Errorf("Repeatable(%s) = %v, want %v", tt.annotations, got, tt.want)
		}
	}
}
