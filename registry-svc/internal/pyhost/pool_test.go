package pyhost

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/wire"
)

var update = flag.Bool("update", false, "rewrite golden files")

// logBuffer is a logger that also keeps its lines for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func testLogger(t *testing.T) (*slog.Logger, *logBuffer) {
	t.Helper()
	lb := &logBuffer{}
	tl := servicetest.Logger(t)
	return slog.New(teeHandler{slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}), tl.Handler()}), lb
}

type teeHandler struct{ a, b slog.Handler }

func (h teeHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h teeHandler) Handle(ctx context.Context, r slog.Record) error {
	_ = h.a.Handle(ctx, r.Clone())
	return h.b.Handle(ctx, r)
}
func (h teeHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return teeHandler{h.a.WithAttrs(a), h.b.WithAttrs(a)}
}
func (h teeHandler) WithGroup(n string) slog.Handler {
	return teeHandler{h.a.WithGroup(n), h.b.WithGroup(n)}
}

func startPool(t *testing.T, opts Options, dirs ...string) (*Pool, *Discovery, *logBuffer) {
	t.Helper()
	log, lb := testLogger(t)
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
	got := names(found)
	want := []string{"async_hello", "collide", "derived_op", "foo_async", "foo_op", "foo_static", "hello", "more_op"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("tools = %v\nwant    %v", got, want)
	}
	byName := map[string]ToolInfo{}
	for _, tl := range found.Tools {
		byName[tl.Name] = tl
	}
	logs := lb.String()
	tests := []struct {
		rule  string
		check func() bool
	}{
		{"async tool is flagged", func() bool { return byName["async_hello"].IsAsync && !byName["hello"].IsAsync }},
		{"byte order: Zeta.py before alpha.py", func() bool { return strings.Contains(byName["collide"].Source, "Zeta.py") }},
		{"collision logs both locations", func() bool {
			return strings.Contains(logs, "tool name collision") && strings.Contains(logs, "Zeta.py:1") && strings.Contains(logs, "alpha.py:1")
		}},
		{"imported Service registered from its own module", func() bool { return strings.Contains(byName["more_op"].Source, "b_more.py") }},
		{"syntax error logged with file", func() bool {
			return strings.Contains(logs, "syntax_bad.py") && strings.Contains(logs, "SyntaxError")
		}},
		{"import error logged with file", func() bool {
			return strings.Contains(logs, "import_bad.py") && strings.Contains(logs, "ModuleNotFoundError")
		}},
		{"failing files reported", func() bool { return len(found.Failed) == 2 }},
		{"constructor failure logged", func() bool {
			return strings.Contains(logs, "BrokenCtorService") && strings.Contains(logs, "constructor failed")
		}},
		{"disabled service logged", func() bool { return strings.Contains(logs, "DisabledService") }},
	}
	for _, tt := range tests {
		if !tt.check() {
			t.Errorf("%s: failed\nlogs:\n%s", tt.rule, logs)
		}
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
	r, err := p.Call(ctx, name, json.RawMessage(args), nil)
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
	p, _, lb := startPool(t, Options{Workers: 1, Heartbeat: 100 * time.Millisecond, HangTimeout: 500 * time.Millisecond}, "../../testdata/calls")
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
