package mcpserver

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/vfs/tasks"
)

func TestNegotiatedTasks(t *testing.T) {
	for _, tt := range []struct {
		params string
		want   bool
	}{
		{`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}`, true},
		{`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"other/ext":{}}}}}`, false},
		{`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}`, false},
		{`{"_meta":{"io.modelcontextprotocol/clientCapabilities":"garbage"}}`, false},
		{`{"task":{"ttl":60000}}`, false}, // the v1 hint is no declaration
		{``, false},
	} {
		var meta map[string]json.RawMessage
		if tt.params != "" {
			msg, _, e := parseMessage(json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":` + tt.params + `}`))
			if e != nil {
				t.Fatalf("parseMessage(%s): %v", tt.params, e)
			}
			meta = msg.meta
		}
		if got := negotiatedTasks(meta); got != tt.want {
			t.Errorf("negotiatedTasks(%s) = %v, want %v", tt.params, got, tt.want)
		}
	}
}

func TestTaskSupport(t *testing.T) {
	for _, tt := range []struct {
		execution, want string
	}{
		{`{"taskSupport":"optional"}`, taskOptional},
		{`{"taskSupport":"required"}`, taskRequired},
		{`{"taskSupport":"forbidden"}`, "forbidden"},
		{``, ""},
	} {
		if got := taskSupport(&registry.Tool{Execution: json.RawMessage(tt.execution)}); got != tt.want {
			t.Errorf("taskSupport(%s) = %q, want %q", tt.execution, got, tt.want)
		}
	}
}

// TestTaskShapes pins the wire shapes the conformance suite checks: a flat
// CreateTaskResult, a DetailedTask that inlines only its status's payload,
// and -32021 naming the extension with HTTP 400.
func TestTaskShapes(t *testing.T) {
	at := time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC)
	base := tasks.Task{ID: "t1", Status: tasks.StatusWorking, Created: at, Updated: at, TTLMs: 60000,
		Result: json.RawMessage(`{"content":[]}`), Error: json.RawMessage(`{"code":-32603,"message":"x"}`)}
	done, failed, asking := base, base, base
	done.Status, failed.Status, asking.Status = tasks.StatusCompleted, tasks.StatusFailed, tasks.StatusInputRequired
	asking.InputRequests = map[string]json.RawMessage{"k": json.RawMessage(`{"method":"elicitation/create"}`)}
	for _, tt := range []struct {
		name string
		v    any
		want string
	}{
		{"create", createTaskResult{ResultType: "task", taskView: viewOf(&base)},
			`{"resultType":"task","taskId":"t1","status":"working","createdAt":"2026-07-28T10:00:00Z","lastUpdatedAt":"2026-07-28T10:00:00Z","ttlMs":60000,"pollIntervalMs":1000}`},
		{"working", detailedTask{ResultType: "complete", taskNotification: detail(&base)},
			`{"resultType":"complete","taskId":"t1","status":"working","createdAt":"2026-07-28T10:00:00Z","lastUpdatedAt":"2026-07-28T10:00:00Z","ttlMs":60000,"pollIntervalMs":1000}`},
		{"completed", detail(&done),
			`{"taskId":"t1","status":"completed","createdAt":"2026-07-28T10:00:00Z","lastUpdatedAt":"2026-07-28T10:00:00Z","ttlMs":60000,"result":{"content":[]}}`},
		{"failed", detail(&failed),
			`{"taskId":"t1","status":"failed","createdAt":"2026-07-28T10:00:00Z","lastUpdatedAt":"2026-07-28T10:00:00Z","ttlMs":60000,"error":{"code":-32603,"message":"x"}}`},
		{"input required", detail(&asking),
			`{"taskId":"t1","status":"input_required","createdAt":"2026-07-28T10:00:00Z","lastUpdatedAt":"2026-07-28T10:00:00Z","ttlMs":60000,"pollIntervalMs":1000,"inputRequests":{"k":{"method":"elicitation/create"}}}`},
		{"acknowledged with tasks", acknowledged(mcp.Meta{}, mcp.NotificationSubscriptions{ToolsListChanged: true}, []string{"t1"}),
			`{"notifications":{"toolsListChanged":true,"taskIds":["t1"]}}`},
	} {
		b, err := json.Marshal(tt.v)
		if err != nil || string(b) != tt.want {
			t.Errorf("%s: %s (%v), want %s", tt.name, b, err, tt.want)
		}
	}
	e := missingTasksCapability("x")
	data, _ := json.Marshal(e.Err)
	if e.Status != http.StatusBadRequest || string(data) != `{"code":-32021,"message":"x","data":{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}` {
		t.Errorf("missing capability: %d %s", e.Status, data)
	}
}
