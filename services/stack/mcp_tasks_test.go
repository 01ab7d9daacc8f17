package stack

import (
	"bufio"
	"bytes"
	"context"
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
	"github.com/mirobody/mirobody-go/services/svc"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

// taskTools is a tool folder for TestMCPTasks: sleepy runs as a task and
// leaves a file next to itself when it is cancelled, so the test sees the
// cancel reach the tool host; confirm asks the user, which a task cannot.
const taskTools = `import asyncio
import pathlib

import mirobody


async def sleepy(seconds: float, marker: str) -> str:
    """Sleeps seconds; leaves <marker>.started beside this file as it begins, and <marker>.cancelled on a cancel."""
    pathlib.Path(__file__).with_name(marker + ".started").write_text("started")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        pathlib.Path(__file__).with_name(marker + ".cancelled").write_text("cancelled")
        raise
    return "slept %s" % marker


sleepy.task_support = "optional"


def confirm(path: str) -> str:
    """Asks the user before deleting path."""
    answer = mirobody.elicit("Delete %s?" % path, {"type": "object", "properties": {"ok": {"type": "boolean"}}})
    return "deleted" if answer["content"]["ok"] else "kept"


confirm.task_support = "optional"


def ask_name() -> str:
    """Asks the user's name, then greets them."""
    r = mirobody.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
    return "hello %s" % r["content"]["name"]


ask_name.task_support = "optional"
`

// modernMeta is the _meta of a 2026-07-28 request declaring the tasks
// extension (or not).
func modernMeta(tasks bool) map[string]any {
	caps := map[string]any{}
	if tasks {
		caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	}
	return map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": caps}
}

// rpcReply is a JSON-RPC answer of /mcp.
type rpcReply struct {
	Result map[string]any `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// modernCall posts one 2026-07-28 request to url with the routing headers
// and returns the HTTP status and the reply.
func modernCall(t *testing.T, url, key, method, name string, params map[string]any) (int, rpcReply) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	must(t, err)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	var out rpcReply
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: HTTP %d, body %s: %v", method, resp.StatusCode, b, err)
	}
	return resp.StatusCode, out
}

// TestMCPTasks: a tool call started as a task on one gateway replica is
// polled and its result read on another; another account gets "unknown
// task" for it, both reading and cancelling; a cancel from the second
// replica stops the tool in its host; a client without the extension gets
// the plain result; a task that asks waits in input_required until a
// tasks/update on the other replica answers it, and then completes.
func TestMCPTasks(t *testing.T) {
	tools := t.TempDir()
	must(t, os.WriteFile(filepath.Join(tools, "task_tools.py"), []byte(taskTools), 0o644))
	natsURL := servicetest.NATS(t)
	db := servicetest.Postgres(t, nil)
	log := servicetest.Logger(t)
	cfg := testConfig(t, natsURL, db.DSN)
	cfg.MCPToolDirs = []string{tools}
	cfg.ToolPaths = []string{"task_tools=" + tools + ":rw"}
	cfg.RateLimitAcct, cfg.RateLimitIP = 0, 0
	gw1 := gateway.New(gateway.Options{Config: cfg, Log: log})
	startGroup(t, vfssvc.New(vfssvc.Options{Config: cfg, Log: log}), registrysvc.New(registrysvc.Options{Config: cfg, Log: log}), gw1)
	c2 := *cfg
	gw2 := gateway.New(gateway.Options{Config: &c2, Log: log})
	startGroup(t, gw2)
	one, two := "http://"+gw1.Addr()+"/mcp", "http://"+gw2.Addr()+"/mcp"
	ctx := context.Background()
	owner := newAccountKey(ctx, t, natsURL, "task-owner@example.com")
	stranger := newAccountKey(ctx, t, natsURL, "task-stranger@example.com")

	start := func(seconds float64, marker string) string {
		t.Helper()
		_, r := modernCall(t, one, owner, "tools/call", "sleepy", map[string]any{"name": "sleepy",
			"arguments": map[string]any{"seconds": seconds, "marker": marker}, "_meta": modernMeta(true)})
		id, _ := r.Result["taskId"].(string)
		if r.Result["resultType"] != "task" || id == "" || r.Result["status"] != "working" {
			t.Fatalf("tools/call sleepy: %+v", r)
		}
		return id
	}
	get := func(url, key, id string) (int, rpcReply) {
		t.Helper()
		return modernCall(t, url, key, "tasks/get", id, map[string]any{"taskId": id, "_meta": modernMeta(true)})
	}

	t.Run("result on the other replica", func(t *testing.T) {
		id := start(0.2, "done")
		var last rpcReply
		servicetest.Eventually(t, 30*time.Second, func() bool {
			_, last = get(two, owner, id)
			return last.Result["status"] == "completed"
		}, "task completes")
		res, _ := last.Result["result"].(map[string]any)
		content, _ := res["content"].([]any)
		if len(content) != 1 || !strings.Contains(toJSON(t, content[0]), "slept done") || last.Result["resultType"] != "complete" {
			t.Errorf("completed task: %+v", last.Result)
		}
	})

	t.Run("input answered on the other replica", func(t *testing.T) {
		meta := modernMeta(true)
		meta["io.modelcontextprotocol/clientCapabilities"].(map[string]any)["elicitation"] = map[string]any{}
		_, r := modernCall(t, one, owner, "tools/call", "ask_name", map[string]any{"name": "ask_name", "arguments": map[string]any{}, "_meta": meta})
		id, _ := r.Result["taskId"].(string)
		if id == "" {
			t.Fatalf("tools/call ask_name: %+v", r)
		}
		var last rpcReply
		servicetest.Eventually(t, 30*time.Second, func() bool {
			_, last = get(one, owner, id)
			return last.Result["status"] == "input_required"
		}, "task waits for input")
		requests, _ := last.Result["inputRequests"].(map[string]any)
		if len(requests) != 1 {
			t.Fatalf("input_required task: %+v", last.Result)
		}
		answers := map[string]any{}
		for k := range requests {
			answers[k] = map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}
		}
		update := map[string]any{"taskId": id, "inputResponses": answers, "_meta": modernMeta(true)}
		if _, r := modernCall(t, two, stranger, "tasks/update", id, update); r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("another account's tasks/update: %+v", r)
		}
		if _, r := modernCall(t, two, owner, "tasks/update", id, update); r.Error != nil || r.Result["resultType"] != "complete" || r.Result["taskId"] != nil {
			t.Fatalf("tasks/update: %+v", r)
		}
		servicetest.Eventually(t, 30*time.Second, func() bool {
			_, last = get(one, owner, id)
			return last.Result["status"] == "completed"
		}, "task completes with the answer")
		if !strings.Contains(toJSON(t, last.Result["result"]), "hello Ada") {
			t.Errorf("resumed task: %+v", last.Result)
		}
	})

	t.Run("another account", func(t *testing.T) {
		id := start(30, "foreign")
		for _, method := range []string{"tasks/get", "tasks/cancel"} {
			_, r := modernCall(t, two, stranger, method, id, map[string]any{"taskId": id, "_meta": modernMeta(true)})
			if r.Error == nil || r.Error.Code != -32602 {
				t.Errorf("%s by another account: %+v", method, r)
			}
			_, r = modernCall(t, two, "", method, id, map[string]any{"taskId": id, "_meta": modernMeta(true)})
			if r.Error == nil || r.Error.Code != -32602 {
				t.Errorf("%s anonymously: %+v", method, r)
			}
		}
		if _, r := get(one, owner, id); r.Result["status"] != "working" {
			t.Errorf("the owner's task after foreign cancels: %+v", r)
		}
		_, _ = modernCall(t, one, owner, "tasks/cancel", id, map[string]any{"taskId": id, "_meta": modernMeta(true)})
	})

	t.Run("cancel stops the tool", func(t *testing.T) {
		id := start(60, "stopped")
		// Cancelled before its body ran, the tool would never run at all
		// (right, but then it leaves no mark): cancel once it sleeps. CI
		// once cancelled 4 ms after the start, and waited for the mark.
		servicetest.Eventually(t, 30*time.Second, func() bool {
			_, err := os.Stat(filepath.Join(tools, "stopped.started"))
			return err == nil
		}, "the tool starts")
		_, r := modernCall(t, two, owner, "tasks/cancel", id, map[string]any{"taskId": id, "_meta": modernMeta(true)})
		if r.Error != nil || r.Result["resultType"] != "complete" || r.Result["taskId"] != nil {
			t.Fatalf("tasks/cancel: %+v", r)
		}
		servicetest.Eventually(t, 30*time.Second, func() bool {
			_, err := os.Stat(filepath.Join(tools, "stopped.cancelled"))
			return err == nil
		}, "the tool host sees the cancel")
		if _, r := get(one, owner, id); r.Result["status"] != "cancelled" || r.Result["result"] != nil {
			t.Errorf("cancelled task: %+v", r.Result)
		}
	})

	t.Run("status notification on the other replica", func(t *testing.T) {
		id := start(1, "notified")
		events := listenTasks(t, two, owner, id)
		ack := <-events
		if !strings.Contains(ack, "notifications/subscriptions/acknowledged") || !strings.Contains(ack, id) {
			t.Fatalf("acknowledgement: %s", ack)
		}
		// The state at subscription time comes first, then each change.
		timeout := time.After(30 * time.Second)
		for done := false; !done; {
			select {
			case ev := <-events:
				if !strings.Contains(ev, `"method":"notifications/tasks"`) || !strings.Contains(ev, id) {
					t.Fatalf("task notification: %s", ev)
				}
				done = strings.Contains(ev, `"status":"completed"`)
				if done && !strings.Contains(ev, "slept notified") {
					t.Errorf("completed notification without the result: %s", ev)
				}
			case <-timeout:
				t.Fatal("no completed notifications/tasks within 30s")
			}
		}
	})

	t.Run("a stopping replica fails its tasks", func(t *testing.T) {
		c3 := *cfg
		gw3 := gateway.New(gateway.Options{Config: &c3, Log: log})
		g := svc.NewGroup(svc.Options{Services: []svc.Service{gw3}, Log: log, Grace: 10 * time.Second})
		must(t, g.Start(ctx))
		t.Cleanup(func() { _ = g.Stop(ctx) })
		_, r := modernCall(t, "http://"+gw3.Addr()+"/mcp", owner, "tools/call", "sleepy", map[string]any{"name": "sleepy",
			"arguments": map[string]any{"seconds": 60, "marker": "orphan"}, "_meta": modernMeta(true)})
		id, _ := r.Result["taskId"].(string)
		if id == "" {
			t.Fatalf("tools/call on the third replica: %+v", r)
		}
		stopCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_ = g.Stop(stopCtx)
		if _, r := get(two, owner, id); r.Result["status"] != "failed" || r.Result["error"] == nil {
			t.Errorf("task of a stopped replica: %+v", r.Result)
		}
		servicetest.Eventually(t, 30*time.Second, func() bool {
			_, err := os.Stat(filepath.Join(tools, "orphan.cancelled"))
			return err == nil
		}, "the tool of a stopped replica's task is cancelled")
	})

	t.Run("a task's tool cannot ask a client without elicitation", func(t *testing.T) {
		// The creating call declared no elicitation: the tool's question
		// ends the task with the tool's own error (CapabilityUnavailable),
		// a completed task rather than one waiting for input nobody gives.
		meta := modernMeta(true)
		_, r := modernCall(t, one, owner, "tools/call", "confirm", map[string]any{"name": "confirm",
			"arguments": map[string]any{"path": "a.txt"}, "_meta": meta})
		id, _ := r.Result["taskId"].(string)
		if id == "" {
			t.Fatalf("tools/call confirm: %+v", r)
		}
		var last rpcReply
		servicetest.Eventually(t, 30*time.Second, func() bool {
			_, last = get(two, owner, id)
			return last.Result["status"] != "working"
		}, "task ends")
		res, _ := last.Result["result"].(map[string]any)
		if last.Result["status"] != "completed" || res["isError"] != true || !strings.Contains(toJSON(t, res["content"]), "elicitation") {
			t.Errorf("task of a tool that asks: %+v", last.Result)
		}
	})

	t.Run("without the extension", func(t *testing.T) {
		_, r := modernCall(t, one, owner, "tools/call", "sleepy", map[string]any{"name": "sleepy",
			"arguments": map[string]any{"seconds": 0, "marker": "sync"}, "_meta": modernMeta(false)})
		if r.Result["resultType"] != "complete" || r.Result["taskId"] != nil || !strings.Contains(toJSON(t, r.Result["content"]), "slept sync") {
			t.Errorf("plain call: %+v", r)
		}
		status, r := modernCall(t, two, owner, "tasks/get", "whatever-task-id-000", map[string]any{"taskId": "whatever-task-id-000", "_meta": modernMeta(false)})
		if status != http.StatusBadRequest || r.Error == nil || r.Error.Code != -32021 {
			t.Errorf("tasks/get without the extension: HTTP %d %+v", status, r)
		}
	})
}

// toJSON renders v for a substring check.
func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return string(b)
}

// tasksScenarios are the suite's scenarios of the tasks extension, run
// with --requirements 2026-07-28. The suite does not score extensions, so
// its exit code ignores them: checkUnscored reads their checks instead.
var tasksScenarios = []string{"tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields",
	"tasks-request-state-removal", "tasks-mrtr-input", "tasks-request-headers", "tasks-dispatch-and-envelope",
	"tasks-required-task-error", "tasks-mrtr-composition"}

// checkUnscored fails the test for every check of the unscored scenarios of
// rev (the tasks extension's, in 2026-07-28) that failed or warned without
// its scenario (or scenario:check) in accepted; results is the suite's -o
// folder and log its output.
func checkUnscored(t *testing.T, results, rev string, accepted []string, log []byte) {
	t.Helper()
	if rev != "2026-07-28" {
		return
	}
	for _, name := range tasksScenarios {
		if bad := scenarioFailures(t, results, name, accepted); len(bad) > 0 {
			t.Errorf("%s %s failed:\n  %s\nsuite output:\n%s", rev, name, strings.Join(bad, "\n  "), log)
		}
	}
}

// listenTasks opens a subscriptions/listen stream on url following the
// task ids and returns its SSE data lines, one by one.
func listenTasks(t *testing.T, url, key string, ids ...string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
		"params": map[string]any{"notifications": map[string]any{"taskIds": ids}, "_meta": modernMeta(true)}})
	must(t, err)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("subscriptions/listen: HTTP %d %s", resp.StatusCode, b)
	}
	out := make(chan string, 16)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				select {
				case out <- data:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}
