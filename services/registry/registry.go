// Package registry is the NATS contract of registry-svc: subjects, message
// types and a typed client. Tool listing and calling go through it from the
// gateway (/mcp) and from agent-svc.
package registry

import (
	"context"
	"encoding/json"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Subjects served by registry-svc.
const (
	SubjectList = "registry.tools.list"
	SubjectCall = "registry.tools.call"
	// SubjectCancel is published (not requested) to cancel a call in flight;
	// every replica subscribes without a queue group, and the one running
	// the call cancels it.
	SubjectCancel = "registry.calls.cancel"
	// EventChanged is published after the registry's tool set changed.
	EventChanged = "events.registry.changed"
)

// Agent names for visibility (SPEC §8).
const (
	AgentNone = ""
	AgentDeep = "DEEP"
	AgentBase = "BASE"
)

// Caller identifies who lists or calls. An empty AccountID is anonymous.
type Caller struct {
	AccountID string `json:"account_id,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	// Agent is the visibility profile: "", DEEP or BASE.
	Agent string `json:"agent,omitempty"`
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
}

// ListResponse is the visible tools, sorted by name.
type ListResponse struct {
	Tools []Tool `json:"tools"`
	// Revision changes whenever the registry's tool set changes.
	Revision string `json:"revision"`
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
}

// CallResponse is an MCP CallToolResult.
type CallResponse struct {
	// Content holds MCP content blocks (text, image, audio, resource...).
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	IsError           bool              `json:"isError,omitempty"`
}

// CancelEvent cancels a call in flight.
type CancelEvent struct {
	CallID string `json:"call_id"`
	Reason string `json:"reason,omitempty"`
}

// ProgressEvent is one progress notification from a running tool.
type ProgressEvent struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// ChangedEvent says the tool set changed.
type ChangedEvent struct {
	Revision string `json:"revision"`
}

// Client is the typed client of registry-svc.
type Client struct{ c *wire.Client }

// NewClient returns a Client over c.
func NewClient(c *wire.Client) *Client { return &Client{c: c} }

// List returns the tools visible to the caller.
func (c *Client) List(ctx context.Context, req *ListRequest) (*ListResponse, error) {
	return wire.Call[ListRequest, ListResponse](ctx, c.c, SubjectList, req)
}

// Call runs a tool. Tool failures are a CallResponse with IsError; an error
// return means the call could not be made (invalid arguments, not found,
// unauthenticated, unavailable...).
func (c *Client) Call(ctx context.Context, req *CallRequest) (*CallResponse, error) {
	return wire.Call[CallRequest, CallResponse](ctx, c.c, SubjectCall, req)
}

// Cancel asks the replica running callID to cancel it.
func (c *Client) Cancel(ctx context.Context, ev *CancelEvent) error {
	return c.c.Publish(ctx, SubjectCancel, ev)
}
