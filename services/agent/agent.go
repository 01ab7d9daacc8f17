// Package agent is the NATS contract of agent-svc: starting a chat turn,
// the numbered events a run streams to the caller's inbox, heartbeats and
// cancellation, plus a typed client that turns the event stream back into
// an ordered sequence for the gateway.
package agent

import (
	"encoding/json"
	"time"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Endpoints and events of agent-svc.
var (
	// RunsStart starts a run (request/reply through the queue group).
	// The reply acknowledges the run; its events then flow to
	// RunSubject(run id), whichever replica owns the run. The run id keys
	// it: the same start sent again (its replica died before answering)
	// acknowledges the run the first one recorded, which goes on with its
	// owner or with the replica that takes it over.
	RunsStart = wire.Endpoint[StartRequest, StartResponse]{Subject: "agent.runs.start", Idempotent: true}
	// RunsCancel is published (no queue group, every replica listens)
	// to cancel a run; the replica running it stops it.
	RunsCancel = wire.Event[CancelEvent]{Subject: "agent.runs.cancel"}
	// SessionDeleted is published when a session is deleted, so that
	// every replica drops its REPL state.
	SessionDeleted = wire.Event[SessionDeletedEvent]{Subject: "events.agent.session_deleted"}
	// RunEvents is the family of run event subjects (RunSubject).
	RunEvents = wire.Event[Event]{Subject: wire.StreamPrefix + ".*"}
)

// DefaultHeartbeat is how often a run emits a heartbeat event.
const DefaultHeartbeat = 2 * time.Second

// StartRequest starts one chat turn.
type StartRequest struct {
	// RunID identifies the run (its events' subject, cancellation,
	// approval, replay); the caller picks it: a UUID.
	RunID     string `json:"run_id"`
	AccountID string `json:"account_id"`
	// SessionID continues a session; empty starts a new one, named
	// after the run (RunID).
	SessionID string `json:"session_id,omitempty"`
	Question  string `json:"question"`
	// Agent is the turn's agent as the user spelled it; Normalize reads it.
	Agent    string `json:"agent,omitempty"`
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	Language string `json:"language,omitempty"`
	Timezone string `json:"timezone,omitempty"`
	// PromptName picks one of the agent's PROMPTS_{NAME} templates
	// (upstream Mirobody's prompt_name); empty means the default.
	PromptName string `json:"prompt_name,omitempty"`
	// HeartbeatMS overrides the heartbeat interval (tests use it).
	HeartbeatMS int `json:"heartbeat_ms,omitempty"`
	// MCPToken is the short-lived access token (agent base, bound to the
	// account and session) that a Base turn's provider presents to our
	// /mcp as `Authorization: Bearer`. The gateway mints it; it is never
	// the user's own key. Secret: never logged.
	MCPToken string `json:"mcp_token,omitempty"`
	// MCPServers are external MCP servers for this turn only (the chat
	// request's mcp_servers): the agent's tool set includes their tools,
	// through registry-svc. Their tokens travel only inside NATS and are
	// never logged.
	MCPServers []ServerSpec `json:"mcp_servers,omitempty"`
	// CanAsk says the client answers a tool's questions (ask events),
	// so a Deep turn's tools may elicit; without it mirobody.elicit
	// raises CapabilityUnavailable.
	CanAsk bool `json:"can_ask,omitempty"`
	// Attachments are the files of the turn's message, which the gateway
	// has already stored in the session's folder (agent-svc/design.md
	// "Attachments"); the run reads them from there.
	Attachments []Attachment `json:"attachments,omitempty"`
}

// Attachment is one file of a chat message, stored in the session's
// folder of the virtual filesystem.
type Attachment struct {
	// Name is the file's name, as the user gave it (made safe).
	Name string `json:"name"`
	// Type is the media type (image/png, application/pdf, text/csv...).
	Type string `json:"type"`
	// Size is the file's length in bytes.
	Size int64 `json:"size"`
	// Path is the file read_file reads: the text of a text file, a short
	// description of an image or a PDF.
	Path string `json:"path"`
	// RawPath holds the bytes, base64-encoded, of a file the provider
	// takes natively (images, PDFs); empty for text files.
	RawPath string `json:"raw_path,omitempty"`
}

// ServerSpec is a server given for one chat turn only (the chat request's
// mcp_servers): the gateway checks it, agent-svc passes it to registry-svc
// with every list and call of the turn. AccessToken travels only inside
// NATS and is never logged.
type ServerSpec struct {
	Name        string `json:"name"`
	URL         string `json:"url"`
	AccessToken string `json:"access_token,omitempty"`
}

// StartResponse acknowledges a run.
type StartResponse struct {
	RunID     string `json:"run_id"`
	SessionID string `json:"session_id"`
	// Instance is the replica running the turn.
	Instance string `json:"instance"`
	// HeartbeatMS is the interval the run's heartbeats follow.
	HeartbeatMS int `json:"heartbeat_ms"`
}

// CancelEvent cancels a run.
type CancelEvent struct {
	RunID string `json:"run_id"`
	// AccountID, when set, must own the run: a user cancels only their
	// own runs (POST /api/runs/{id}/cancel).
	AccountID string `json:"account_id,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// SessionDeletedEvent says a session is gone.
type SessionDeletedEvent struct {
	AccountID string `json:"account_id"`
	SessionID string `json:"session_id"`
}

// Event types (agent-svc/design.md "Chat turns"); the JSON of an Event is the SSE data block.
const (
	EventStart      = "start"
	EventText       = "text"
	EventReasoning  = "reasoning"
	EventToolCall   = "tool_call"
	EventToolResult = "tool_result"
	EventTodos      = "todos"
	EventUsage      = "usage"
	EventNotice     = "notice"
	EventError      = "error"
	EventHeartbeat  = "heartbeat"
	EventEnd        = "end"
	// EventTitle carries the session's generated title (Text), sent
	// before the end event of a session's first turn.
	EventTitle = "title"
	// EventApproval says the run paused until the user approves, edits
	// or rejects a tool call (ID, Name, Args); it ends the stream.
	EventApproval = "approval"
	// EventAsk says the run paused because a tool asks the user
	// (mirobody.elicit): ID is the tool call's id, Name the tool, Message
	// the question and Schema its flat JSON Schema; it ends the stream.
	EventAsk = "ask"
)

// Paused says whether an event of type typ pauses the run until the
// user answers (an approval or a tool's question); it ends the stream.
func Paused(typ string) bool { return typ == EventApproval || typ == EventAsk }

// Finish reasons of an end event.
const (
	FinishStop        = "stop"
	FinishError       = "error"
	FinishUnavailable = "unavailable"
	FinishEmpty       = "empty"
	FinishCancelled   = "cancelled"
)

// Tool result statuses.
const (
	StatusOK      = "ok"
	StatusPartial = "partial"
	StatusError   = "error"
)

// Todo is one item of the planning list.
type Todo struct {
	Content string `json:"content"`
	// Status is pending, in_progress or completed.
	Status string `json:"status"`
}

// Event is one numbered event of a run. Only the fields of its Type are set.
type Event struct {
	// Seq numbers the events of a run from 1, so the receiver can detect
	// loss and reorder, and replay from a number; heartbeats carry none.
	Seq  int64  `json:"seq,omitempty"`
	Type string `json:"type"`
	// ID is the run id (start) or the tool call id (tool_call, approval).
	ID        string `json:"id,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	Text      string `json:"text,omitempty"`
	Reasoning string `json:"reasoning,omitempty"`
	// Name and Args describe a tool call (tool_call, approval).
	Name string          `json:"name,omitempty"`
	Args json.RawMessage `json:"args,omitempty"`
	// ToolCallID, Content, Status, ErrorKind and Truncated describe a tool result.
	ToolCallID string `json:"tool_call_id,omitempty"`
	Content    string `json:"content,omitempty"`
	Status     string `json:"status,omitempty"`
	ErrorKind  string `json:"error_kind,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
	// Items is the todo list.
	Items []Todo `json:"items,omitempty"`
	// Token counts of a usage event.
	InputTokens      int64 `json:"input_tokens,omitempty"`
	OutputTokens     int64 `json:"output_tokens,omitempty"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	// Attachments are the question's files, on the start event, so that
	// a saved transcript shows them.
	Attachments []Attachment `json:"attachments,omitempty"`
	// Message is the text of a notice or an error, or an ask's question.
	Message      string `json:"message,omitempty"`
	FinishReason string `json:"finish_reason,omitempty"`
	// Schema is the requested schema of an ask event.
	Schema json.RawMessage `json:"schema,omitempty"`
}
