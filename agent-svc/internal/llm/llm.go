// Package llm is the one small interface agent loops use to talk to a model,
// with adapters for OpenAI-compatible Chat Completions and Anthropic
// Messages built on the official SDKs. Messages are kept in a provider-neutral
// shape so that a session can be replayed against either.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Roles of a Message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one model message in provider-neutral form. An assistant
// message may carry tool calls; each is answered by one tool message whose
// ToolCallID names it.
type Message struct {
	Role      string     `json:"role"`
	Content   string     `json:"content,omitempty"`
	Reasoning string     `json:"reasoning,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// ToolName is the called tool, kept for display and summaries.
	ToolName string `json:"tool_name,omitempty"`
	// IsError marks a tool message that reports a failure.
	IsError bool `json:"is_error,omitempty"`
	// Attachments are the files of a user message (attachments.go).
	Attachments []Attachment `json:"attachments,omitempty"`
}

// ToolCall is one tool call requested by the model.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// Tool is one tool offered to the model.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Usage counts tokens of one model call.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
}

// Add returns u plus v.
func (u Usage) Add(v Usage) Usage {
	return Usage{InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens,
		CacheReadTokens: u.CacheReadTokens + v.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens}
}

// Request is one model call.
type Request struct {
	Model     string
	System    string
	Messages  []Message
	Tools     []Tool
	MaxTokens int
	// Cache, when set, keeps the encoded tools and messages for the next
	// request of the same conversation; nil encodes everything anew.
	Cache *Cache
}

// Delta is one streamed piece of the answer.
type Delta struct {
	Text      string
	Reasoning string
}

// Response is the complete answer of one model call.
type Response struct {
	Message Message
	Usage   Usage
	// StopReason is the provider's reason, normalised to stop, tool_calls,
	// length or the provider's own word.
	StopReason string
	// Model is the model that answered as the provider names it (it may
	// differ from the requested one: an alias resolved to a version);
	// empty when the provider did not say.
	Model string
}

// Provider streams one model call. onDelta is called in order, from the
// calling goroutine, for every piece of text or reasoning as it arrives.
type Provider interface {
	Stream(ctx context.Context, req *Request, onDelta func(Delta)) (*Response, error)
}

// ErrStreamBroken reports a stream that failed after it had started to
// deliver deltas, so that the caller knows output was already shown.
var ErrStreamBroken = errors.New("model stream broke mid-way")

// Error is a provider failure with the kind of error that callers may show.
type Error struct {
	// Provider is the configured name of the provider (ClientOptions.Name).
	Provider string
	// Kind is rate_limited, unavailable, bad_request, auth or stream_broken.
	Kind string
	// Status is the HTTP status, when there was one.
	Status int
	// Partial is true when deltas were already delivered.
	Partial bool
	Err     error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("model provider %s: %s (HTTP %d): %v", e.name(), e.Kind, e.Status, e.Err)
	}
	return fmt.Sprintf("model provider %s: %s: %v", e.name(), e.Kind, e.Err)
}

// Public is the text users may see: the provider's name, the HTTP status
// and what it means, never the provider's body, URL or key; for example
// "provider openrouter: HTTP 429 rate limited".
func (e *Error) Public() string {
	what, ok := kindText[e.Kind]
	if !ok {
		what = "failed"
	}
	if e.Status != 0 {
		return fmt.Sprintf("provider %s: HTTP %d %s", e.name(), e.Status, what)
	}
	return fmt.Sprintf("provider %s: %s", e.name(), what)
}

func (e *Error) name() string {
	if e.Provider == "" {
		return "(unnamed)"
	}
	return e.Provider
}

var kindText = map[string]string{
	"rate_limited":  "rate limited",
	"auth":          "rejected the API key",
	"bad_request":   "rejected the request",
	"unavailable":   "unavailable",
	"stream_broken": "stream broke mid-way",
	// KindMCPUnreachable (mcp.go)
	"mcp_unreachable": "could not reach the MCP server it was given",
}

// named sets the provider's name on an *Error.
func named(name string, err error) error {
	var le *Error
	if errors.As(err, &le) {
		le.Provider = name
	}
	return err
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether calling again may succeed.
func (e *Error) Retryable() bool {
	return e.Kind == "rate_limited" || e.Kind == "unavailable" || e.Kind == "stream_broken"
}

func kindOfStatus(status int) string {
	switch {
	case status == 429:
		return "rate_limited"
	case status == 401 || status == 403:
		return "auth"
	case status >= 500:
		return "unavailable"
	case status >= 400:
		return "bad_request"
	}
	return "unavailable"
}

// rawSchema splits a tool's JSON Schema into its top-level members, each
// kept as raw JSON. The SDKs copy raw JSON as it is, while a fully decoded
// schema (maps of maps) was decoded and re-encoded by reflection for every
// tool on every model step: most of the loop's own cost per step.
func rawSchema(schema json.RawMessage) (map[string]any, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(schema, &members); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(members))
	for k, v := range members {
		out[k] = v
	}
	return out, nil
}
