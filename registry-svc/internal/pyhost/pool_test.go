package pyhost

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/wire"
)

var update = flag.Bool("update", false, "rewrite golden files")

func startPool(t testing.TB, opts Options, dirs ...string) (*Pool, *Discovery, *servicetest.LogBuffer) {
	t.Helper()
	log, lb := servicetest.CaptureLogger(t)
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			t.Fatal(err)
		}
		opts.Dirs = append(opts.Dirs, abs)
	}
	opts.Log = log
	p, found, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("starting pool: %v", err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p, found, lb
}

func names(found *Discovery) []string {
	var out []string
	for _, tl := range found.Tools {
		out = append(out, tl.Name)
	}
	sort.Strings(out)
	return out
}

func TestDiscoveryRules(t *testing.T) {
	_, found, lb := startPool(t, Options{Workers: 1}, "../../testdata/discovery")
	byName := map[string]ToolInfo{}
	for _, tl := range found.Tools {
		byName[tl.Name] = tl
	}
	logs := lb.String()
	has := func(name string) func() bool { return func() bool { _, ok := byName[name]; return ok } }
	not := func(f func() bool) func() bool { return func() bool { return !f() } }
	logged := func(parts ...string) func() bool {
		return func() bool {
			for _, p := range parts {
				if !strings.Contains(logs, p) {
					return false
				}
			}
			return true
		}
	}
	tests := []struct {
		rule  string
		check func() bool
	}{
		{"module-level function is a tool", has("hello")},
		{"subfolder is skipped", not(has("sub_tool"))},
		{".txt file is skipped", not(has("txt_tool"))},
		{"_private.py is skipped", not(has("helper_tool"))},
		{"__init__.py is skipped", not(has("init_tool"))},
		{"test_x.py is skipped", not(has("test_prefixed_tool"))},
		{"x_test.py is skipped", not(has("test_suffixed_tool"))},
		{"sibling _helpers.py is importable", func() bool { return has("hello")() && !contains(found.Failed, "a_tools.py") }},
		{"syntax error is logged with the file", logged("syntax_bad.py", "SyntaxError")},
		{"import error is logged with the file", logged("import_bad.py", "ModuleNotFoundError", "nonexistent_module_xyz")},
		{"failed files are reported", func() bool { return len(found.Failed) == 2 }},
		{"_name function is skipped", not(has("_private_fn"))},
		{"imported function is ignored", not(has("join"))},
		{"imported Service is registered once, from its own module", func() bool {
			return strings.Contains(byName["more_op"].Source, "b_more.py") && strings.Count(logs, "tool=more_op") == 0
		}},
		{"Service public methods are tools", func() bool { return has("foo_op")() && has("foo_async")() && has("foo_static")() }},
		{"Service _methods are skipped", not(has("_hidden"))},
		{"inherited method is ignored", func() bool { return !has("inherited_op")() && !has("base_op")() && has("derived_op")() }},
		{"method assigned from an imported function is ignored", not(has("joined"))},
		{"_enabled() False removes the class", func() bool { return !has("disabled_op")() && strings.Contains(logs, "DisabledService") }},
		{"raising constructor skips only that class", func() bool {
			return !has("broken_op")() && has("foo_op")() && strings.Contains(logs, "BrokenCtorService") && strings.Contains(logs, "constructor failed")
		}},
		{"sync and async tools", func() bool {
			return byName["async_hello"].IsAsync && !byName["hello"].IsAsync && byName["foo_async"].IsAsync
		}},
		{"task_support becomes execution.taskSupport", func() bool {
			return string(byName["async_hello"].Execution) == `{"taskSupport":"optional"}` && byName["hello"].Execution == nil
		}},
		{"task_after_input becomes TaskAfterInput", func() bool {
			return byName["async_hello"].TaskAfterInput && !byName["hello"].TaskAfterInput
		}},
		{"within a folder files are read in byte order (Zeta.py before alpha.py)", func() bool { return strings.Contains(byName["collide"].Source, "Zeta.py") }},
		{"the loser is logged with both locations", logged("tool name collision", "Zeta.py:1", "alpha.py:1")},
		{"nothing else is a tool", func() bool { return len(byName) == 8 }},
	}
	for _, tt := range tests {
		if !tt.check() {
			t.Errorf("%s: failed", tt.rule)
		}
	}
	if t.Failed() {
		t.Logf("tools: %v\nlogs:\n%s", names(found), logs)
	}
}

func TestSchemaGolden(t *testing.T) {
	_, found, lb := startPool(t, Options{Workers: 1}, "../../testdata/schema")
	sort.Slice(found.Tools, func(i, j int) bool { return found.Tools[i].Name < found.Tools[j].Name })
	for i := range found.Tools {
		found.Tools[i].Source = filepath.Base(found.Tools[i].Source)
	}
	got, err := json.MarshalIndent(found.Tools, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden := "../../testdata/schema.golden.json"
	if *update {
		if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(bytes.TrimSpace(want)) != string(got) {
		t.Errorf("schema differs from %s (run with -update to accept):\n%s", golden, got)
	}
	if logs := lb.String(); !strings.Contains(logs, "unknown parameter type") || !strings.Contains(logs, "parameter=thing") {
		t.Errorf("unknown type warning missing:\n%s", logs)
	}
}

func call(t *testing.T, p *Pool, ctx context.Context, name, args string) (string, error) {
	t.Helper()
	r, err := p.Call(ctx, name, json.RawMessage(args), nil, nil)
	if err != nil {
		return "", err
	}
	b, _ := json.Marshal(r)
	return string(b), nil
}

func TestHostKilledMidCall(t *testing.T) {
	p, _, lb := startPool(t, Options{Workers: 1}, "../../testdata/calls")
	ctx := context.Background()
	out, err := call(t, p, ctx, "pid", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Content []struct{ Text string } `json:"content"`
	}
	_ = json.Unmarshal([]byte(out), &r)
	var pid int
	if err := json.Unmarshal([]byte(r.Content[0].Text), &pid); err != nil || pid == 0 {
		t.Fatalf("pid result %s: %v", out, err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := call(t, p, ctx, "sleep_sync", `{"seconds": 30}`)
		errc <- err
	}()
	servicetest.Eventually(t, 5*time.Second, func() bool { return strings.Contains(lb.String(), "sleeping 30") }, "slow call started")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !wire.IsCode(err, wire.Unavailable) {
		t.Fatalf("call in flight: got %v, want unavailable", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := call(t, p, cctx, "echo", `{"text": "again"}`); err != nil {
		t.Fatalf("next call: %v", err)
	}
	if p.Restarts() != 1 {
		t.Errorf("restarts = %d, want 1", p.Restarts())
	}
}

func TestHungHostReplaced(t *testing.T) {
	p, _, lb := startPool(t, Options{Workers: 1, Heartbeat: 200 * time.Millisecond, HangTimeout: 1500 * time.Millisecond}, "../../testdata/calls")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := call(t, p, ctx, "block_loop", `{"seconds": 30}`); !wire.IsCode(err, wire.Unavailable) {
		t.Fatalf("blocked call: got %v, want unavailable", err)
	}
	if !strings.Contains(lb.String(), "hung") {
		t.Errorf("no hang log line")
	}
	if _, err := call(t, p, ctx, "echo", `{"text": "x"}`); err != nil {
		t.Fatalf("call after replacement: %v", err)
	}
}

func TestCheckVersion(t *testing.T) {
	if err := CheckVersion(context.Background(), Interpreter("")); err != nil {
		t.Fatalf("system python: %v", err)
	}
	err := CheckVersion(context.Background(), "/nonexistent/python3")
	if err == nil || !strings.Contains(err.Error(), "PYTHON") {
		t.Errorf("missing interpreter: got %v", err)
	}
	fake := filepath.Join(t.TempDir(), "python")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 3.8\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err = CheckVersion(context.Background(), fake)
	if err == nil || !strings.Contains(err.Error(), "3.8") || !strings.Contains(err.Error(), "3.9 or newer") {
		t.Errorf("old python: got %v", err)
	}
}

func contains(files []string, base string) bool {
	for _, f := range files {
		if filepath.Base(f) == base {
			return true
		}
	}
	return false
}

func TestStuckThreadsRecycleHost(t *testing.T) {
	p, _, lb := startPool(t, Options{Workers: 1, Heartbeat: 100 * time.Millisecond, AbandonedLimit: 2}, "../../testdata/calls")
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err := call(t, p, ctx, "sleep_sync", `{"seconds": 60}`)
		cancel()
		if err == nil {
			t.Fatal("the slow call did not time out")
		}
	}
	servicetest.Eventually(t, 10*time.Second, func() bool { return p.Restarts() == 1 }, "host with stuck threads replaced")
	if !strings.Contains(lb.String(), "stuck tool threads") {
		t.Error("no log line for the replacement")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := call(t, p, ctx, "echo", `{"text": "x"}`); err != nil {
		t.Fatalf("call after replacement: %v", err)
	}
}

// TestInvalidUTF8Arguments: arguments that are not UTF-8 are refused at
// once, and a request line the host cannot decode gets an error reply
// instead of none (its caller used to wait for TOOL_TIMEOUT_S).
func TestInvalidUTF8Arguments(t *testing.T) {
	p, _, _ := startPool(t, Options{Workers: 1}, "../../testdata/calls")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := json.RawMessage("{\"text\":\"caf\xe9\"}")
	if _, err := p.Call(ctx, "echo", args, nil, nil); !wire.IsCode(err, wire.InvalidArgument) {
		t.Fatalf("Call: %v, want invalid_argument", err)
	}
	// Past the pool's check, straight to a host.
	w, err := p.pick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := w.request(ctx, &message{Op: "call", Name: "echo", Args: args}, true, callHooks{})
	if err != nil {
		t.Fatalf("request: %v (the host never answered)", err)
	}
	if !r.Invalid || !strings.Contains(r.Error, "UTF-8") {
		t.Fatalf("reply %+v, want an invalid request error", r)
	}
	// The host still serves.
	if out, err := call(t, p, ctx, "echo", `{"text":"ok"}`); err != nil || !strings.Contains(out, "ok") {
		t.Fatalf("echo after: %s %v", out, err)
	}
}
