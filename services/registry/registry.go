// Package registry is the NATS contract of registry-svc: subjects, message
// types and a typed client. Tool listing and calling go through it from the
// gateway (/mcp) and from agent-svc.
package registry

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Endpoints and events of registry-svc.
var (
	ToolsList = wire.Endpoint[ListRequest, ListResponse]{Subject: "registry.tools.list", Idempotent: true}
	ToolsCall = wire.Endpoint[CallRequest, CallResponse]{Subject: "registry.tools.call"}
	// CallsCancel is published (not requested) to cancel a call in flight;
	// every replica subscribes without a queue group, and the one running
	// the call cancels it.
	CallsCancel = wire.Event[CancelEvent]{Subject: "registry.calls.cancel"}
	// Changed is published after the registry's tool set changed.
	Changed = wire.Event[ChangedEvent]{Subject: "events.registry.changed"}
	// Progress is the stream a call's ProgressSubject names: the running
	// tool's progress notifications (Progress.On(subject)).
	Progress = wire.Event[ProgressEvent]{Subject: wire.StreamPrefix + ".*"}
)

// Caller identifies who lists or calls. An empty AccountID is anonymous.
type Caller struct {
	AccountID string `json:"account_id,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	// Agent is the visibility profile: whose allow and deny lists apply
	// (agent.AgentNone for a plain MCP client).
	Agent agent.Name `json:"agent,omitempty"`
}

// Anonymous reports whether no account is identified.
func (c Caller) Anonymous() bool { return c.AccountID == "" }

// Tool is one tool as MCP clients see it, plus the registry's own facts.
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	// Meta is the tool's _meta for MCP clients (a Python tool's meta
	// attribute).
	Meta json.RawMessage `json:"_meta,omitempty"`
	// Execution is the tool's MCP execution object
	// ({"taskSupport": "optional"|"required"}) when it may run as a task.
	Execution json.RawMessage `json:"execution,omitempty"`
	// TaskAfterInput marks a task tool whose first round runs inline: it
	// becomes a task only once a call carries answers to its questions
	// (SEP-2322 composed with tasks, gateway/design.md "Tasks").
	TaskAfterInput bool `json:"task_after_input,omitempty"`
	// RequiresData is the data kind the tool is gated on ("" for none).
	RequiresData string `json:"requires_data,omitempty"`
	// TakesUserInfo is true when the server injects user_info.
	TakesUserInfo bool `json:"takes_user_info,omitempty"`
	// Source says where the tool comes from (file path or "builtin").
	Source string `json:"source,omitempty"`
}

// ListRequest asks for the tools visible to Caller.
type ListRequest struct {
	Caller Caller `json:"caller"`
	// IfNoneMatch is the ETag of a list the caller already holds: when the
	// answer has not changed, the reply has NotModified set and no tools.
	// Client.List fills it from its own cache.
	IfNoneMatch string `json:"if_none_match,omitempty"`
	// Servers are external MCP servers for this request only (a chat
	// turn's mcp_servers); their tools are listed as <name>__<tool>. Such
	// a list is never cached.
	Servers []agent.ServerSpec `json:"servers,omitempty"`
}

// ListResponse is the visible tools, sorted by name.
type ListResponse struct {
	Tools []Tool `json:"tools"`
	// Revision changes whenever the registry's tool set changes.
	Revision string `json:"revision"`
	// ETag identifies this exact answer (tool set, visibility profile and
	// the caller's data kinds).
	ETag string `json:"etag,omitempty"`
	// NotModified is set, with no tools, when IfNoneMatch equals ETag.
	NotModified bool `json:"not_modified,omitempty"`
	// Stable is set when this answer changes only with an event the
	// registry publishes after its own state changed: Changed (a new
	// revision) or AccountChanged for the caller's account. A holder that
	// has heard every such event since it asked (subscribed the whole
	// time, connected, nothing dropped) may reuse the answer without
	// asking again.
	Stable bool `json:"stable,omitempty"`
}

// CallRequest runs one tool for Caller.
type CallRequest struct {
	Caller    Caller          `json:"caller"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// CallID identifies the call for cancellation; empty means not cancellable.
	CallID string `json:"call_id,omitempty"`
	// ProgressSubject, when set, receives ProgressEvent messages.
	ProgressSubject string `json:"progress_subject,omitempty"`
	// Meta is the request's MCP _meta, passed through (progress token).
	Meta json.RawMessage `json:"_meta,omitempty"`
	// Servers are the per-request servers the list had (ListRequest.Servers).
	Servers []agent.ServerSpec `json:"servers,omitempty"`
	// LogLevel is the lowest MCP log level ("debug" … "emergency") the
	// caller wants of the tool's log records, sent as Log events on
	// ProgressSubject; "" sends none.
	LogLevel string `json:"log_level,omitempty"`
	// ClientCapabilities names what the caller can answer for a tool:
	// "elicitation", "sampling", "roots". A tool asking for anything else
	// gets an exception (registry-svc/design.md "Elicitation and sampling").
	ClientCapabilities []string `json:"client_capabilities,omitempty"`
	// InputResponses are the answers of earlier rounds, by the key of the
	// input request they answer: the tool runs again and gets them.
	InputResponses map[string]json.RawMessage `json:"input_responses,omitempty"`
	// Replay names the input requests the previous run stopped at: until
	// the tool has their answers it repeats that run, and its log records
	// and progress, already sent, are dropped.
	Replay []string `json:"replay,omitempty"`
}

// CallResponse is an MCP CallToolResult.
type CallResponse struct {
	// Content holds MCP content blocks (text, image, audio, resource...).
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	IsError           bool              `json:"isError,omitempty"`
	// InputRequests, when set, say that the tool stopped to ask the caller
	// (elicitation/create, sampling/createMessage, roots/list requests by
	// key); Content is empty then. The caller answers them and calls again
	// with InputResponses holding every answer so far.
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
	// MissingCapability names the client capability a tool needed and the
	// caller lacks (the tool did not handle the exception); IsError is set
	// and Content says so.
	MissingCapability string `json:"missingCapability,omitempty"`
}

// CancelEvent cancels a call in flight. It reaches every replica, so it
// names the caller too: only a call whose Caller.AccountID equals
// AccountID ("" for anonymous) is cancelled.
type CancelEvent struct {
	CallID    string `json:"call_id"`
	AccountID string `json:"account_id,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// ProgressEvent is one progress notification from a running tool.
type ProgressEvent struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
	// Log, when set, makes this event a log record of the tool rather than
	// progress (CallRequest.LogLevel).
	Log *LogRecord `json:"log,omitempty"`
}

// LogRecord is a tool's log record as MCP notifications/message carries it.
type LogRecord struct {
	// Level is an MCP (RFC 5424) level: debug, info, notice, warning, error,
	// critical, alert, emergency.
	Level  string          `json:"level"`
	Logger string          `json:"logger,omitempty"`
	Data   json.RawMessage `json:"data"`
}

// ChangedEvent says the tool set changed.
type ChangedEvent struct {
	Revision string `json:"revision"`
}

// Client is the typed client of registry-svc.
type Client struct {
	c *wire.Client
	// The last list answer per caller, revalidated by ETag on every List,
	// so that an unchanged list of a thousand tools costs a small round
	// trip instead of decoding hundreds of KB. Callers with the same answer
	// (same visibility profile and data kinds) share one copy, and only the
	// answers of the newest revision seen are kept, so memory stays at a
	// few lists however many accounts list.
	listMu   sync.Mutex
	etags    map[listKey]string       // caller -> ETag of its last answer
	answers  map[string]*ListResponse // ETag -> answer, for revision only
	revision string
}

// listKey is what a list answer depends on, on the caller's side.
type listKey struct {
	account string
	agent   agent.Name
}

// maxCachedCallers bounds the callers remembered; when full the cache
// starts over, which costs one full reply per caller.
const maxCachedCallers = 4096

// NewClient returns a Client over c.
func NewClient(c *wire.Client) *Client { return &Client{c: c} }

// List returns the tools visible to the caller. The response is shared
// with the client's cache (and with other List calls that get the same
// answer): treat it as read-only. Copying a thousand tools per call would
// cost more than the rest of an unchanged list.
func (c *Client) List(ctx context.Context, req *ListRequest) (*ListResponse, error) {
	if req.IfNoneMatch != "" || len(req.Servers) > 0 {
		return ToolsList.Call(ctx, c.c, req)
	}
	key := listKey{req.Caller.AccountID, req.Caller.Agent}
	c.listMu.Lock()
	cached := c.answers[c.etags[key]]
	c.listMu.Unlock()
	q := *req
	if cached != nil {
		q.IfNoneMatch = cached.ETag
	}
	resp, err := ToolsList.Call(ctx, c.c, &q)
	if err != nil {
		return nil, err
	}
	if resp.NotModified && cached != nil && resp.ETag == cached.ETag {
		return cached, nil
	}
	if resp.ETag != "" && !resp.NotModified {
		// Clip: a caller that appends gets its own array.
		resp.Tools = slices.Clip(resp.Tools)
		resp = c.remember(key, resp)
	}
	return resp, nil
}

// remember caches resp as key's answer and returns the copy to keep using
// (an equal answer cached earlier).
func (c *Client) remember(key listKey, resp *ListResponse) *ListResponse {
	c.listMu.Lock()
	defer c.listMu.Unlock()
	if c.etags == nil || len(c.etags) >= maxCachedCallers {
		c.etags = map[listKey]string{}
	}
	// Accounts with external servers have answers of their own: bound them too.
	if c.answers == nil || resp.Revision != c.revision || len(c.answers) >= maxCachedCallers {
		c.answers = map[string]*ListResponse{}
		c.revision = resp.Revision
	}
	if prev := c.answers[resp.ETag]; prev != nil {
		resp = prev
	}
	c.etags[key] = resp.ETag
	c.answers[resp.ETag] = resp
	return resp
}

// Cancel asks the replica running callID to cancel it.
func (c *Client) Cancel(ctx context.Context, ev *CancelEvent) error {
	return CallsCancel.Publish(ctx, c.c, ev)
}
