package llm

import (
	"context"
	"fmt"
	"strings"
)

// MCPServer is the MCP server a remote-tools provider calls by itself.
type MCPServer struct {
	// Label names the server in the provider's request and events.
	Label string
	// URL is the server's Streamable HTTP endpoint; the provider must be
	// able to reach it.
	URL string
	// Token is sent as `Authorization: Bearer`; it never appears in
	// errors or logs.
	Token string
}

// MCPRequest is one provider call in which the provider lists and calls
// Server's tools itself and answers when it is done.
type MCPRequest struct {
	Model  string
	System string
	// Messages is the conversation so far, ending with the user's
	// question. Tool steps of earlier turns are replayed as text.
	Messages  []Message
	Server    MCPServer
	MaxTokens int
	// MaxSteps bounds the provider's tool calls (OpenAI) or its paused
	// continuations (Anthropic).
	MaxSteps int
}

// ToolResult is the result of a tool call the provider ran.
type ToolResult struct {
	CallID  string
	Name    string
	Content string
	IsError bool
}

// MCPEvent is one streamed piece of a remote-tools turn; one field is set.
type MCPEvent struct {
	Text      string
	Reasoning string
	// Call is a tool call the provider is making, with its arguments.
	Call *ToolCall
	// Result is the result of an earlier Call.
	Result *ToolResult
}

// MCPResponse is the complete answer of a remote-tools call.
type MCPResponse struct {
	// Messages are the turn's new messages in the shape the Deep agent
	// keeps (assistant tool calls, each answered by a tool message, then
	// the final assistant text), so that a session can switch agents.
	Messages []Message
	Answer   string
	Usage    Usage
	// StopReason is stop, length or the provider's own word.
	StopReason string
	// Model is the model that answered, as Response.Model.
	Model string
}

// MCPProvider runs a whole turn with the tool loop on the provider's side
// (OpenAI Responses with an mcp tool, Anthropic's MCP connector). onEvent
// is called in order from the calling goroutine.
type MCPProvider interface {
	StreamMCP(ctx context.Context, req *MCPRequest, onEvent func(MCPEvent)) (*MCPResponse, error)
}

// KindMCPUnreachable is the Error kind of a provider that could not list
// or call the tools of the MCP server it was given.
const KindMCPUnreachable = "mcp_unreachable"

// mcpTranscript records the events of a remote-tools turn as neutral
// messages while forwarding them. The calls between two pieces of text form
// one assistant message, answered by their tool messages, as a Deep step.
type mcpTranscript struct {
	msgs []Message
	cur  *Message
	// results answer cur's calls; they follow it once it is complete.
	results []Message
	// open lists the calls still waiting for their result.
	open map[string]ToolCall
	// delivered is true once anything reached the caller.
	delivered bool
}

func (t *mcpTranscript) record(ev MCPEvent, onEvent func(MCPEvent)) {
	t.delivered = true
	switch {
	case ev.Text != "" || ev.Reasoning != "":
		if t.cur == nil || len(t.cur.ToolCalls) > 0 {
			t.flush()
			t.cur = &Message{Role: RoleAssistant}
		}
		t.cur.Content += ev.Text
		t.cur.Reasoning += ev.Reasoning
	case ev.Call != nil:
		if t.cur == nil {
			t.cur = &Message{Role: RoleAssistant}
		}
		t.cur.ToolCalls = append(t.cur.ToolCalls, *ev.Call)
		if t.open == nil {
			t.open = map[string]ToolCall{}
		}
		t.open[ev.Call.ID] = *ev.Call
	case ev.Result != nil:
		if tc, ok := t.open[ev.Result.CallID]; ok && ev.Result.Name == "" {
			ev.Result.Name = tc.Name
		}
		delete(t.open, ev.Result.CallID)
		t.results = append(t.results, Message{Role: RoleTool, ToolCallID: ev.Result.CallID, ToolName: ev.Result.Name, Content: ev.Result.Content, IsError: ev.Result.IsError})
	}
	onEvent(ev)
}

// flush closes the current assistant message. A call the provider never
// answered gets an error result, so that the history stays replayable
// (Anthropic refuses a tool_use without its tool_result).
func (t *mcpTranscript) flush() {
	if t.cur == nil {
		return
	}
	for _, tc := range t.cur.ToolCalls {
		if _, ok := t.open[tc.ID]; ok {
			t.results = append(t.results, Message{Role: RoleTool, ToolCallID: tc.ID, ToolName: tc.Name, Content: "the provider returned no result for this call", IsError: true})
			delete(t.open, tc.ID)
		}
	}
	t.msgs = append(append(t.msgs, *t.cur), t.results...)
	t.cur, t.results = nil, nil
}

// answer is the text of the final assistant message, after the last
// tool step.
func (t *mcpTranscript) answer() string {
	t.flush()
	if n := len(t.msgs); n > 0 && t.msgs[n-1].Role == RoleAssistant && len(t.msgs[n-1].ToolCalls) == 0 {
		return t.msgs[n-1].Content
	}
	return ""
}

// finish returns the turn's messages.
func (t *mcpTranscript) finish() []Message {
	t.flush()
	return t.msgs
}

// replayNoteRunes bounds each tool argument or result replayed as text.
const replayNoteRunes = 2000

// textHistory turns a session's messages into alternating user and
// assistant text for a remote-tools provider. Tool steps are folded into
// the assistant's text: provider-specific MCP items cannot be replayed
// portably (they name a server the next request may not carry, and a
// session may have switched agents or providers in between).
func textHistory(msgs []Message) []Message {
	var out []Message
	add := func(role, text string) {
		if strings.TrimSpace(text) == "" {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content += "\n\n" + text
			return
		}
		out = append(out, Message{Role: role, Content: text})
	}
	for _, m := range msgs {
		switch m.Role {
		case RoleUser:
			add(RoleUser, m.Content)
			if n := len(out); n > 0 && out[n-1].Role == RoleUser {
				out[n-1].Attachments = append(out[n-1].Attachments, m.Attachments...)
			}
		case RoleAssistant:
			var b strings.Builder
			b.WriteString(m.Content)
			for _, tc := range m.ToolCalls {
				fmt.Fprintf(&b, "\n[called tool %s with %s]", tc.Name, cut(string(tc.Args), replayNoteRunes))
			}
			add(RoleAssistant, b.String())
		case RoleTool:
			verb := "returned"
			if m.IsError {
				verb = "failed"
			}
			add(RoleAssistant, fmt.Sprintf("[tool %s %s: %s]", m.ToolName, verb, cut(m.Content, replayNoteRunes)))
		}
	}
	return out
}

func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
