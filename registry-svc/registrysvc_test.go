package registrysvc

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/wire"
)

func TestListMergesFoldersInOrder(t *testing.T) {
	tests := []struct {
		name         string
		dirs         string
		readSkillSrc string
	}{
		{name: "python folder before builtin wins", dirs: "testdata/discovery,testdata/second,builtin", readSkillSrc: "second_tools.py"},
		{name: "builtin first wins", dirs: "builtin,testdata/discovery,testdata/second", readSkillSrc: "builtin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t, map[string]string{"MCP_TOOL_DIRS": tt.dirs, "PYTHON_WORKERS": "1"})
			resp, err := e.client.List(context.Background(), &registry.ListRequest{Caller: anon})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]registry.Tool{}
			var order []string
			for _, tl := range resp.Tools {
				got[tl.Name] = tl
				order = append(order, tl.Name)
			}
			want := "async_hello,collide,derived_op,foo_async,foo_op,foo_static,get_genetic_data,hello,import_health_indicators,more_op,normalize_unit,query_health_indicators,read_skill,resolve_indicator,second_only"
			if strings.Join(order, ",") != want {
				t.Fatalf("tools = %v\nwant    %s", order, want)
			}
			if !strings.Contains(got["hello"].Source, "discovery/a_tools.py") {
				t.Errorf("hello from %s, want the first folder", got["hello"].Source)
			}
			if !strings.Contains(got["read_skill"].Source, tt.readSkillSrc) {
				t.Errorf("read_skill from %s, want %s", got["read_skill"].Source, tt.readSkillSrc)
			}
			logs := e.logs.String()
			if !strings.Contains(logs, "tool name collision") || !strings.Contains(logs, "second/second_tools.py") {
				t.Errorf("cross-folder collision not logged with both locations:\n%s", logs)
			}
			if resp.Revision == "" {
				t.Error("empty revision")
			}
		})
	}
}

func TestCallValidation(t *testing.T) {
	e := start(t, map[string]string{"MCP_TOOL_DIRS": "testdata/calls", "PYTHON_WORKERS": "1"})
	tests := []struct {
		name, tool, args string
		want             []string
	}{
		{"unknown key", "add", `{"a": 1, "c": 2}`, []string{"unknown argument(s) c", "accepted arguments: a, b"}},
		{"user_info forged", "whoami", `{"user_info": {"user_id": "mallory"}}`, []string{"user_info", "supplied by the server", "accepted arguments: note"}},
		{"wrong type", "add", `{"a": "one"}`, []string{"argument a", "want integer"}},
		{"missing required", "add", `{"b": 1}`, []string{"missing propert", "a"}},
		{"not an object", "add", `[1, 2]`, []string{"must be a JSON object"}},
		{"invalid UTF-8", "echo", "{\"text\": \"caf\xe9\"}", []string{"not valid UTF-8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.call(t, alice, tt.tool, tt.args)
			if !wire.IsCode(err, wire.InvalidArgument) {
				t.Fatalf("got %v, want invalid_argument", err)
			}
			t.Log(err)
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q lacks %q", err.Error(), w)
				}
			}
		})
	}
	if _, err := e.call(t, alice, "nope", `{}`); !wire.IsCode(err, wire.NotFound) {
		t.Errorf("unknown tool: got %v, want not_found", err)
	}
}

func TestCallResults(t *testing.T) {
	e := start(t, map[string]string{"MCP_TOOL_DIRS": "testdata/calls", "PYTHON_WORKERS": "2"})
	tests := []struct {
		name, tool, args string
		caller           registry.Caller
		text             string
		structured       string
		isError          bool
		empty            bool
	}{
		{name: "str", tool: "echo", args: `{"text": "héllo"}`, text: "héllo"},
		{name: "dict", tool: "add", args: `{"a": 1}`, text: `{"sum":3}`, structured: `{"sum":3}`},
		{name: "list", tool: "as_list", text: `[1,"two",3.5]`, structured: `{"result":[1,"two",3.5]}`},
		{name: "None", tool: "nothing", empty: true},
		{name: "success false", tool: "soft_fail", text: "the thing is broken", isError: true},
		{name: "exception", tool: "explode", args: `{"message": "bad input"}`, text: "explode failed: ValueError: bad input", isError: true},
		{name: "datetime Decimal bytes", tool: "odd_values",
			structured: `{"when":"2024-05-17T08:30:00+00:00","day":"2024-05-17","price":12.5,"count":3,"raw":"hi","blob":"/wA=","nan":null}`},
		{name: "user_info shape", tool: "whoami", caller: alice,
			structured: `{"user_info":{"success":true,"user_id":"acct-alice","session_id":"sess-1"},"note":null}`},
		{name: "null optional argument is omitted", tool: "add", args: `{"a": 1, "b": null}`, text: `{"sum":3}`},
		{name: "async", tool: "sleep_async", args: `{"seconds": 0}`, text: "slept"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.caller
			if c == (registry.Caller{}) {
				c = alice
			}
			r, err := e.call(t, c, tt.tool, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if r.IsError != tt.isError {
				t.Errorf("isError = %v, want %v (%s)", r.IsError, tt.isError, text(r))
			}
			if tt.empty && len(r.Content) != 0 {
				t.Errorf("content = %s, want none", text(r))
			}
			if tt.text != "" && text(r) != tt.text {
				t.Errorf("text = %q, want %q", text(r), tt.text)
			}
			if tt.structured != "" && string(r.StructuredContent) != tt.structured {
				t.Errorf("structuredContent = %s\nwant %s", r.StructuredContent, tt.structured)
			}
			if strings.Contains(text(r), "Traceback") {
				t.Errorf("traceback leaked: %s", text(r))
			}
		})
	}
	if !strings.Contains(e.logs.String(), "Traceback") {
		t.Error("the exception's traceback was not logged")
	}
}

func TestAnonymousUserInfoToolIsUnauthenticated(t *testing.T) {
	e := start(t, map[string]string{"MCP_TOOL_DIRS": "testdata/calls", "PYTHON_WORKERS": "1"})
	if _, err := e.call(t, anon, "whoami", `{}`); !wire.IsCode(err, wire.Unauthenticated) {
		t.Fatalf("got %v, want unauthenticated", err)
	}
}

func TestPrintGoesToLogOnly(t *testing.T) {
	e := start(t, map[string]string{"MCP_TOOL_DIRS": "testdata/calls", "PYTHON_WORKERS": "1"})
	r, err := e.call(t, alice, "talk", `{"text": "xyzzy"}`)
	if err != nil {
		t.Fatal(err)
	}
	if text(r) != "said xyzzy" {
		t.Errorf("result %q carries more than the return value", text(r))
	}
	servicetest.Eventually(t, 2*time.Second, func() bool { return strings.Contains(e.logs.String(), "printed: xyzzy") }, "print() line in the log")
}

func TestTimeouts(t *testing.T) {
	e := start(t, map[string]string{"MCP_TOOL_DIRS": "testdata/calls", "PYTHON_WORKERS": "1", "TOOL_TIMEOUT_S": "1"})
	for _, tool := range []string{"sleep_sync", "sleep_async"} {
		t.Run(tool, func(t *testing.T) {
			began := time.Now()
			r, err := e.call(t, alice, tool, `{"seconds": 20}`)
			if err != nil {
				t.Fatal(err)
			}
			if !r.IsError || !strings.Contains(text(r), "timed out") {
				t.Errorf("got %q (isError %v), want a timed-out error result", text(r), r.IsError)
			}
			if d := time.Since(began); d > 5*time.Second {
				t.Errorf("took %s", d)
			}
			if r, err := e.call(t, alice, "echo", `{"text": "after"}`); err != nil || text(r) != "after" {
				t.Errorf("call after timeout: %v %v", r, err)
			}
		})
	}
}

// TestToolDeadlines: a tool's TOOL_TIMEOUTS entry overrides TOOL_TIMEOUT_S,
// and a caller's shorter deadline wins, with the "timed out" result
// reaching the caller before its deadline instead of a deadline error.
// The one host process is free again at once either way.
func TestToolDeadlines(t *testing.T) {
	e := start(t, map[string]string{"MCP_TOOL_DIRS": "testdata/calls", "PYTHON_WORKERS": "1", "TOOL_TIMEOUT_S": "60",
		"TOOL_TIMEOUTS": `{"sleep_sync": 1}`})
	tests := []struct {
		name, tool string
		caller     time.Duration // the caller's own deadline; 0: none
	}{
		{"per-tool timeout", "sleep_sync", 0},
		{"caller deadline", "sleep_async", 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.caller > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.caller)
				defer cancel()
			}
			began := time.Now()
			r, err := e.client.Call(ctx, &registry.CallRequest{Caller: alice, Name: tt.tool, Arguments: json.RawMessage(`{"seconds": 30}`)})
			if err != nil {
				t.Fatalf("want a timed-out result, got %v", err)
			}
			if !r.IsError || !strings.Contains(text(r), "timed out") {
				t.Errorf("got %q (isError %v), want a timed-out error result", text(r), r.IsError)
			}
			if d := time.Since(began); d > 4*time.Second {
				t.Errorf("took %s", d)
			}
			began = time.Now()
			if r, err := e.call(t, alice, "echo", `{"text": "after"}`); err != nil || text(r) != "after" {
				t.Errorf("call after timeout: %v %v", r, err)
			}
			if d := time.Since(began); d > time.Second {
				t.Errorf("the next call took %s", d)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	e := start(t, map[string]string{"MCP_TOOL_DIRS": "testdata/calls", "PYTHON_WORKERS": "1"})
	done := make(chan *registry.CallResponse, 1)
	go func() {
		r, err := e.client.Call(context.Background(), &registry.CallRequest{Caller: alice, Name: "sleep_async", CallID: "c-1", Arguments: json.RawMessage(`{"seconds": 20}`)})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	running := func() bool {
		e.svc.reg.cancelMu.Lock()
		defer e.svc.reg.cancelMu.Unlock()
		return e.svc.reg.cancels[callKey{alice.AccountID, "c-1"}] != nil
	}
	servicetest.Eventually(t, 10*time.Second, running, "the call never started")
	// Another account naming the same call id cancels nothing. Events of
	// one subscription are handled in order, so once a later event got
	// through, this one was seen (and ignored).
	for _, ev := range []registry.CancelEvent{{CallID: "c-1", AccountID: "acct-bob"}, {CallID: "c-1"}} {
		if err := e.client.Cancel(context.Background(), &ev); err != nil {
			t.Fatal(err)
		}
	}
	probe := callKey{"acct-probe", "p-1"}
	probed := make(chan struct{})
	e.svc.reg.track(probe, func(error) { close(probed) })
	if err := e.client.Cancel(context.Background(), &registry.CancelEvent{CallID: probe.id, AccountID: probe.account}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-probed:
	case <-time.After(10 * time.Second):
		t.Fatal("the probe cancellation never arrived")
	}
	e.svc.reg.untrack(probe)
	if !running() {
		t.Fatal("a cancellation from another account stopped the call")
	}
	for {
		if err := e.client.Cancel(context.Background(), &registry.CancelEvent{CallID: "c-1", AccountID: alice.AccountID}); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-done:
			if r == nil || !r.IsError || !strings.Contains(text(r), "cancelled") {
				t.Fatalf("got %+v, want a cancelled error result", r)
			}
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func TestStopLeavesNoProcesses(t *testing.T) {
	// Unsandboxed: the tool reports its own pid, which inside the
	// sandbox's PID namespace is always 1 (and there the kernel ends the
	// whole namespace with its first process anyway).
	e := start(t, map[string]string{"MCP_TOOL_DIRS": "testdata/calls", "PYTHON_WORKERS": "2", "TOOL_SANDBOX": "off"})
	pids := map[int]bool{}
	for range 6 {
		r, err := e.call(t, alice, "pid", `{}`)
		if err != nil {
			t.Fatal(err)
		}
		var pid int
		_ = json.Unmarshal([]byte(text(r)), &pid)
		pids[pid] = true
	}
	if err := e.svc.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d still exists after Stop (kill 0: %v)", pid, err)
		}
	}
	// The Stop from t.Cleanup must be harmless.
}

func TestHostDeathRetriesOnlyIdempotentCalls(t *testing.T) {
	// The markers live outside the sandbox's temp dir, which a new host
	// does not share: the folder is granted through TOOL_PATHS.
	dir := t.TempDir()
	e := start(t, map[string]string{"MCP_TOOL_DIRS": "testdata/calls", "PYTHON_WORKERS": "1", "TOOL_SANDBOX": "required",
		"TOOL_PATHS": "call_tools=" + dir + ":rw"})
	args := func(name string) string {
		b, _ := json.Marshal(map[string]string{"marker": dir + "/" + name})
		return string(b)
	}
	if _, err := e.call(t, alice, "crash_once", args("plain")); !wire.IsCode(err, wire.Unavailable) {
		t.Errorf("plain tool: got %v, want unavailable (no silent retry)", err)
	}
	r, err := e.call(t, alice, "crash_once_idempotent", args("idem"))
	if err != nil || text(r) != "recovered" {
		t.Errorf("idempotent tool: %v %v, want one retry that succeeds", r, err)
	}
}
