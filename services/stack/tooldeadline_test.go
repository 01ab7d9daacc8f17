package stack

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/gateway"
	registrysvc "github.com/mirobody/mirobody-go/registry-svc"
	"github.com/mirobody/mirobody-go/services/servicetest"
)

// deadlineTools are Python tools that run for as long as they are told;
// wait_for_cancel writes its marker file when it is cancelled.
const deadlineTools = `import asyncio
import time


def nap(seconds: float) -> str:
    """Sleep in a thread."""
    time.sleep(seconds)
    return "rested"


async def wait_for_cancel(seconds: float, marker: str) -> str:
    """Sleep on the event loop; write marker when cancelled."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        with open(marker, "w") as f:
            f.write("cancelled")
        raise
    return "finished"


def echo(text: str) -> str:
    """Return text."""
    return text
`

// TestToolDeadlineOverMCP runs Python tools over /mcp (gateway → NATS →
// registry → one host process): a tool within TOOL_TIMEOUT_S succeeds; a
// tool past its TOOL_TIMEOUTS entry gets a "timed out" result, is
// cancelled in the host, and the host serves the next call at once.
func TestToolDeadlineOverMCP(t *testing.T) {
	tools := t.TempDir()
	must(t, os.WriteFile(filepath.Join(tools, "deadline_tools.py"), []byte(deadlineTools), 0o644))
	natsURL := servicetest.NATS(t)
	log := servicetest.Logger(t)
	cfg := testConfig(t, natsURL, "")
	cfg.MCPToolDirs = []string{tools}
	// The sandboxed tool proves its cancellation by writing a marker
	// outside its own temp dir: that folder is granted to it.
	markers := t.TempDir()
	cfg.ToolPaths = []string{"deadline_tools=" + markers + ":rw"}
	cfg.PythonWorkers = 1
	cfg.ToolTimeoutS = 5
	cfg.ToolTimeouts = map[string]int{"wait_for_cancel": 1}
	cfg.RateLimitAcct, cfg.RateLimitIP = 0, 0
	gw := gateway.New(gateway.Options{Config: cfg, Log: log})
	startGroup(t, registrysvc.New(registrysvc.Options{Config: cfg, Log: log}), gw)
	url := "http://" + gw.Addr() + "/mcp"

	call := func(name string, args any) (result struct {
		Content []struct{ Text string }
		IsError bool
	}, took time.Duration) {
		t.Helper()
		a, _ := json.Marshal(args)
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":` + string(a) + `}}`
		began := time.Now()
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		must(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		took = time.Since(began)
		var reply struct {
			Result *json.RawMessage
			Error  any
		}
		if err := json.Unmarshal(b, &reply); err != nil || reply.Result == nil {
			t.Fatalf("%s: %d %s", name, resp.StatusCode, b)
		}
		must(t, json.Unmarshal(*reply.Result, &result))
		return result, took
	}

	if r, took := call("nap", map[string]any{"seconds": 3}); r.IsError || len(r.Content) != 1 || r.Content[0].Text != "rested" {
		t.Errorf("a 3 s tool under TOOL_TIMEOUT_S=5: %+v after %s", r, took)
	}

	marker := filepath.Join(markers, "cancelled")
	r, took := call("wait_for_cancel", map[string]any{"seconds": 60, "marker": marker})
	if !r.IsError || len(r.Content) != 1 || !strings.Contains(r.Content[0].Text, "timed out") {
		t.Errorf("a tool past its timeout: %+v", r)
	}
	if took > 3*time.Second {
		t.Errorf("a tool with a 1 s timeout answered after %s", took)
	}
	servicetest.Eventually(t, 5*time.Second, func() bool {
		_, err := os.Stat(marker)
		return err == nil
	}, "the timed-out tool was never cancelled in the host")

	if r, took := call("echo", map[string]any{"text": "after"}); r.IsError || r.Content[0].Text != "after" || took > time.Second {
		t.Errorf("the next call on the one host process: %+v after %s", r, took)
	}
}
