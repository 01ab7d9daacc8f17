package registrysvc

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/servicetest"
)

func TestHotReload(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("first.py", "def first() -> str:\n    \"\"\"One.\"\"\"\n    return 'one'\n")
	url := servicetest.NATS(t)
	events := make(chan string, 16)
	sub, err := servicetest.Conn(t, url).Subscribe(registry.Changed.Subject, func(m *nats.Msg) {
		var ev registry.ChangedEvent
		_ = json.Unmarshal(m.Data, &ev)
		events <- ev.Revision
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	e := startOn(t, url, map[string]string{"MCP_TOOL_DIRS": dir + ",builtin", "PYTHON_WORKERS": "2", "TOOLS_WATCH": "true"})

	describe := func(name string) string {
		resp, err := e.client.List(context.Background(), &registry.ListRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range resp.Tools {
			if tl.Name == name {
				return tl.Description
			}
		}
		return ""
	}
	// A reload starts fresh sandboxed hosts, which takes seconds on a
	// loaded 2-core machine: the bound only catches a reload that never
	// announces itself.
	waitEvent := func(what string) {
		t.Helper()
		select {
		case <-events:
		case <-time.After(15 * time.Second):
			t.Fatalf("%s: no %s event within 15 s", what, registry.Changed.Subject)
		}
	}
	steps := []struct {
		name   string
		change func()
		check  func() bool
	}{
		{"add", func() { write("second.py", "async def second() -> str:\n    \"\"\"Two.\"\"\"\n    return 'two'\n") },
			func() bool { return describe("second") == "Two." }},
		{"change", func() { write("first.py", "def first() -> str:\n    \"\"\"One, revised.\"\"\"\n    return 'one'\n") },
			func() bool { return describe("first") == "One, revised." }},
		{"delete", func() { _ = os.Remove(filepath.Join(dir, "second.py")) },
			func() bool { return describe("second") == "" && describe("first") != "" }},
	}
	for _, st := range steps {
		began := time.Now()
		st.change()
		waitEvent(st.name)
		if !st.check() {
			t.Fatalf("%s: list did not change", st.name)
		}
		t.Logf("%s: visible after %s", st.name, time.Since(began).Round(time.Millisecond))
	}
	r, err := e.call(t, alice, "first", `{}`)
	if err != nil || text(r) != "one" {
		t.Fatalf("call after reloads: %v %v", r, err)
	}

	before := e.names(t, anon)
	write("first.py", "def first( -> str:\n")
	servicetest.Eventually(t, 3*time.Second, func() bool { return strings.Contains(e.logs.String(), "keeping the previous tools") }, "broken reload logged")
	if got := e.names(t, anon); !slices.Equal(got, before) {
		t.Errorf("a broken file changed the tool set: %v, want %v", got, before)
	}
	if r, err := e.call(t, alice, "first", `{}`); err != nil || text(r) != "one" {
		t.Errorf("call after broken reload: %v %v", r, err)
	}
	select {
	case <-events:
		t.Error("a broken reload published a change event")
	default:
	}
}

// TestReloadDrainsCallsInFlight: a call running in the old host finishes
// normally after a reload swapped the registry.
func TestReloadDrainsCallsInFlight(t *testing.T) {
	dir := t.TempDir()
	slow := "import asyncio\n\n\nasync def slow(seconds: float) -> str:\n    \"\"\"Sleeps.\"\"\"\n    print('slow started', flush=True)\n    await asyncio.sleep(seconds)\n    return 'done'\n"
	if err := os.WriteFile(filepath.Join(dir, "slow.py"), []byte(slow), 0o644); err != nil {
		t.Fatal(err)
	}
	e := start(t, map[string]string{"MCP_TOOL_DIRS": dir, "PYTHON_WORKERS": "1", "TOOLS_WATCH": "true"})
	before := e.svc.reg.current()
	result := make(chan string, 1)
	go func() {
		r, err := e.call(t, alice, "slow", `{"seconds": 1.5}`)
		if err != nil {
			result <- err.Error()
			return
		}
		result <- text(r)
	}()
	servicetest.Eventually(t, 5*time.Second, func() bool { return strings.Contains(e.logs.String(), "slow started") }, "slow call running")
	if err := os.WriteFile(filepath.Join(dir, "other.py"), []byte("def other() -> str:\n    \"\"\"Other.\"\"\"\n    return 'o'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	servicetest.Eventually(t, 3*time.Second, func() bool { return e.svc.reg.current() != before }, "registry swapped")
	if got := <-result; got != "done" {
		t.Errorf("call in flight across the reload: %q, want done", got)
	}
}

func TestToolsWatchFalseDisablesReload(t *testing.T) {
	e := start(t, map[string]string{"MCP_TOOL_DIRS": t.TempDir(), "PYTHON_WORKERS": "1", "TOOLS_WATCH": "false"})
	if e.svc.watcher != nil {
		t.Error("TOOLS_WATCH=false started a folder watch")
	}
}
