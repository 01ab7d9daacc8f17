package registrysvc

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/registry-svc/internal/builtin"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/wire"
)

func TestBuiltinResult(t *testing.T) {
	tests := []struct {
		name       string
		v          any
		err        error
		text       string
		structured string
		isError    bool
		wireCode   wire.Code
	}{
		{name: "string", v: "hi", text: "hi"},
		{name: "nil", v: nil},
		{name: "struct", v: struct {
			A int `json:"a"`
		}{1}, text: `{"a":1}`, structured: `{"a":1}`},
		{name: "slice", v: []int{1, 2}, text: `[1,2]`, structured: `{"result":[1,2]}`},
		{name: "tool error", err: builtin.Failf("no such %s", "thing"), text: "no such thing", isError: true},
		{name: "other error", err: errors.New("disk on fire"), text: "t failed: disk on fire", isError: true},
		{name: "wire error", err: wire.Errorf(wire.InvalidArgument, "bad"), wireCode: wire.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := builtinResult("t", tt.v, tt.err)
			if tt.wireCode != "" {
				if !wire.IsCode(err, tt.wireCode) {
					t.Fatalf("got %v, want %s", err, tt.wireCode)
				}
				return
			}
			if r == nil {
				t.Fatalf("no result (err %v)", err)
			}
			if text(r) != tt.text || string(r.StructuredContent) != tt.structured || r.IsError != tt.isError {
				t.Errorf("got text %q structured %s isError %v", text(r), r.StructuredContent, r.IsError)
			}
		})
	}
}

func TestBuiltinThroughRegistry(t *testing.T) {
	var gotUser builtin.UserInfo
	gated := &builtin.Tool{
		Name: "private_numbers", Description: "Gated test tool.", RequiresData: "health", TakesUserInfo: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`),
		Call: func(_ context.Context, req *builtin.Request) (any, error) {
			gotUser = req.User
			var args struct{ N int }
			if err := req.Bind(&args); err != nil {
				return nil, err
			}
			return map[string]int{"double": 2 * args.N}, nil
		},
	}
	skills := t.TempDir()
	if err := os.MkdirAll(filepath.Join(skills, "demo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(skills, "demo", "SKILL.md"), []byte("---\nname: demo\ndescription: d\n---\nDemo body.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := start(t, map[string]string{"MCP_TOOL_DIRS": "builtin", "SKILL_DIRS": skills}, gated, builtin.ReadSkill())
	r, err := e.call(t, alice, "private_numbers", `{"n": 21}`)
	if err != nil || string(r.StructuredContent) != `{"double":42}` {
		t.Fatalf("gated built-in: %v %v", r, err)
	}
	if gotUser != (builtin.UserInfo{Success: true, UserID: "acct-alice", SessionID: "sess-1"}) {
		t.Errorf("user info = %+v", gotUser)
	}
	if _, err := e.call(t, alice, "private_numbers", `{"n": "x"}`); !wire.IsCode(err, wire.InvalidArgument) {
		t.Errorf("bad argument: got %v", err)
	}
	if _, err := e.call(t, anon, "private_numbers", `{"n": 1}`); !wire.IsCode(err, wire.Unauthenticated) {
		t.Errorf("anonymous: got %v", err)
	}
	r, err = e.call(t, registry.Caller{}, "read_skill", `{"name": "demo"}`)
	if err != nil || !strings.HasSuffix(text(r), "Demo body.\n") {
		t.Errorf("read_skill: %v %v", r, err)
	}
}

func TestBuiltinProgress(t *testing.T) {
	slow := &builtin.Tool{
		Name: "slow", Description: "Reports progress.", InputSchema: json.RawMessage(`{"type":"object"}`),
		Call: func(ctx context.Context, req *builtin.Request) (any, error) {
			req.Progress(ctx, 1, 2, "half")
			req.Progress(ctx, 2, 2, "done")
			return "ok", nil
		},
	}
	e := start(t, map[string]string{"MCP_TOOL_DIRS": "builtin"}, slow)
	events := make(chan registry.ProgressEvent, 4)
	sub, err := e.wire.Conn().Subscribe("progress.test", func(m *nats.Msg) {
		var ev registry.ProgressEvent
		_ = json.Unmarshal(m.Data, &ev)
		events <- ev
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := e.wire.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.Call(context.Background(), &registry.CallRequest{Name: "slow", ProgressSubject: "progress.test"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []registry.ProgressEvent{{Progress: 1, Total: 2, Message: "half"}, {Progress: 2, Total: 2, Message: "done"}} {
		select {
		case got := <-events:
			if got != want {
				t.Errorf("progress %+v, want %+v", got, want)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("no progress event")
		}
	}
}

func TestStartFailsOnBadPython(t *testing.T) {
	url := servicetest.NATS(t)
	s := New(Options{Config: testConfig(t, url, map[string]string{"MCP_TOOL_DIRS": "testdata/calls", "PYTHON": "/nonexistent/python3"}), Log: servicetest.Logger(t)})
	err := s.Start(context.Background())
	if err == nil {
		_ = s.Stop(context.Background())
		t.Fatal("Start succeeded with a missing interpreter")
	}
	if !strings.Contains(err.Error(), "/nonexistent/python3") || !strings.Contains(err.Error(), "PYTHON") {
		t.Errorf("unclear error: %v", err)
	}
}

func TestPythonProgressAndContent(t *testing.T) {
	e := start(t, map[string]string{"MCP_TOOL_DIRS": "testdata/content", "PYTHON_WORKERS": "1"})
	events := make(chan registry.ProgressEvent, 8)
	sub, err := e.wire.Conn().Subscribe("progress.py", func(m *nats.Msg) {
		var ev registry.ProgressEvent
		_ = json.Unmarshal(m.Data, &ev)
		events <- ev
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := e.wire.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	r, err := e.client.Call(context.Background(), &registry.CallRequest{Caller: alice, Name: "steps", Arguments: json.RawMessage(`{"n": 2}`), ProgressSubject: "progress.py"})
	if err != nil || text(r) != "sent True" {
		t.Fatalf("steps: %v %v", r, err)
	}
	for _, want := range []registry.ProgressEvent{{Progress: 1, Total: 2, Message: "step 1"}, {Progress: 2, Total: 2, Message: "step 2"}} {
		select {
		case got := <-events:
			if got != want {
				t.Errorf("progress %+v, want %+v", got, want)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("no progress event")
		}
	}
	r, err = e.client.Call(context.Background(), &registry.CallRequest{Caller: alice, Name: "mixed"})
	if err != nil || len(r.Content) != 4 || string(r.StructuredContent) != `{"result":[1,2]}` {
		t.Fatalf("mixed: %+v %v", r, err)
	}
}
