// Package tasks is the vfs-svc contract of MCP tasks (the
// io.modelcontextprotocol/tasks extension, SEP-2663): the durable state of
// a tool call that runs in the background, so that every gateway replica
// answers tasks/get and tasks/cancel for it (gateway/design.md "Tasks").
package tasks

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Endpoints of task state. Every request names the owner's account ("" for
// an anonymous caller): a task of another owner is not_found, never
// permission_denied, so an id reveals nothing.
var (
	// Create stores a new working task. It answers once the row is
	// committed, so a tasks/get right after the CreateTaskResult finds it.
	Create = wire.Endpoint[CreateRequest, Task]{Subject: "vfs.tasks.create"}
	// Get reads a task that has not expired.
	Get = wire.Endpoint[GetRequest, Task]{Subject: "vfs.tasks.get", Idempotent: true}
	// Finish records the end of a working task: completed with the tool's
	// result, or failed with a protocol error. A task that is no longer
	// working (cancelled meanwhile) is left as it is and returned.
	Finish = wire.Endpoint[FinishRequest, Task]{Subject: "vfs.tasks.finish"}
	// Cancel moves a working task to cancelled; a terminal task is left as
	// it is (cancel is idempotent). The answer says whether this call
	// cancelled it, so that exactly one caller stops the tool.
	Cancel = wire.Endpoint[CancelRequest, CancelResponse]{Subject: "vfs.tasks.cancel"}
	// Update records a client's answers to an input_required task's
	// questions; once none is pending the task is working again and the
	// answer says so (Resumed), so that exactly one caller runs it again.
	// A task in any other state is left as it is.
	Update = wire.Endpoint[UpdateRequest, UpdateResponse]{Subject: "vfs.tasks.update"}
)

// Task statuses (SEP-2663).
const (
	StatusWorking = "working"
	// StatusInputRequired: the tool asked its client; InputRequests are
	// the questions still pending.
	StatusInputRequired = "input_required"
	StatusCompleted     = "completed"
	StatusFailed        = "failed"
	StatusCancelled     = "cancelled"
)

// Task is one task's stored state.
type Task struct {
	ID string `json:"id"`
	// AccountID owns the task ("" for an anonymous caller); Principal is
	// the credential that started it (an API key id), kept for the record.
	AccountID string `json:"account_id,omitempty"`
	Principal string `json:"principal,omitempty"`
	Tool      string `json:"tool"`
	// CallID is the registry call id running the tool, which a cancel
	// names to stop it.
	CallID  string `json:"call_id"`
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
	// Result is the tool's CallToolResult once completed; Error the
	// JSON-RPC error object ({code, message, data}) once failed.
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
	Created time.Time       `json:"created"`
	Updated time.Time       `json:"updated"`
	// TTLMs is how long the task is kept after its creation, in
	// milliseconds.
	TTLMs int64 `json:"ttl_ms"`
	// Call is the gateway's record of the call (opaque here), to run the
	// tool again with the answers on any replica.
	Call json.RawMessage `json:"call,omitempty"`
	// InputRequests are the pending questions of an input_required task,
	// by key; Answers the client's answers so far, by key.
	InputRequests map[string]json.RawMessage `json:"input_requests,omitempty"`
	Answers       map[string]json.RawMessage `json:"answers,omitempty"`
}

// Terminal reports whether the task has ended.
func (t *Task) Terminal() bool { return t.Status != StatusWorking && t.Status != StatusInputRequired }

// CreateRequest creates a working task with a caller-minted, unguessable id.
type CreateRequest struct {
	ID        string `json:"id"`
	AccountID string `json:"account_id,omitempty"`
	Principal string `json:"principal,omitempty"`
	Tool      string `json:"tool"`
	CallID    string `json:"call_id"`
	TTLMs     int64  `json:"ttl_ms"`
	// Call is Task.Call.
	Call json.RawMessage `json:"call,omitempty"`
}

// GetRequest reads one task of AccountID.
type GetRequest struct {
	ID        string `json:"id"`
	AccountID string `json:"account_id,omitempty"`
}

// FinishRequest ends a working task's run of AccountID with Status
// completed (Result set), failed (Error set), or input_required
// (InputRequests set, with the Answers the run had).
type FinishRequest struct {
	ID            string                     `json:"id"`
	AccountID     string                     `json:"account_id,omitempty"`
	Status        string                     `json:"status"`
	Message       string                     `json:"message,omitempty"`
	Result        json.RawMessage            `json:"result,omitempty"`
	Error         json.RawMessage            `json:"error,omitempty"`
	InputRequests map[string]json.RawMessage `json:"input_requests,omitempty"`
	Answers       map[string]json.RawMessage `json:"answers,omitempty"`
}

// UpdateRequest answers questions of an input_required task of
// AccountID; responses to no pending question are ignored.
type UpdateRequest struct {
	ID        string                     `json:"id"`
	AccountID string                     `json:"account_id,omitempty"`
	Responses map[string]json.RawMessage `json:"responses"`
}

// UpdateResponse is the task after the update; Resumed is true when this
// request answered its last pending question (the task is working again).
type UpdateResponse struct {
	Task    Task `json:"task"`
	Resumed bool `json:"resumed"`
}

// CancelRequest cancels a task of AccountID.
type CancelRequest struct {
	ID        string `json:"id"`
	AccountID string `json:"account_id,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// CancelResponse is the task after the cancel; Cancelled is true when this
// request moved it from working to cancelled.
type CancelResponse struct {
	Task      Task `json:"task"`
	Cancelled bool `json:"cancelled"`
}

// Client is the typed client of task state.
type Client struct{ c *wire.Client }

// NewClient returns a Client over c.
func NewClient(c *wire.Client) *Client { return &Client{c: c} }

// Create stores a new working task.
func (c *Client) Create(ctx context.Context, req *CreateRequest) (*Task, error) {
	return Create.Call(ctx, c.c, req)
}

// Get reads a task.
func (c *Client) Get(ctx context.Context, req *GetRequest) (*Task, error) {
	return Get.Call(ctx, c.c, req)
}

// Finish ends a working task.
func (c *Client) Finish(ctx context.Context, req *FinishRequest) (*Task, error) {
	return Finish.Call(ctx, c.c, req)
}

// Update answers an input_required task's questions.
func (c *Client) Update(ctx context.Context, req *UpdateRequest) (*UpdateResponse, error) {
	return Update.Call(ctx, c.c, req)
}

// Cancel cancels a task.
func (c *Client) Cancel(ctx context.Context, req *CancelRequest) (*CancelResponse, error) {
	return Cancel.Call(ctx, c.c, req)
}
