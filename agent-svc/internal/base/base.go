// Package base is the Base agent: no tool loop of ours. The provider gets
// our /mcp URL and a short-lived token, lists and calls our tools itself
// (OpenAI Responses with an mcp tool, Anthropic's MCP connector), and its
// stream is forwarded in the chat event vocabulary (agent-svc/design.md "Chat turns").
package base

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"text/template"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/agent-svc/internal/turn"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/wire"
)

// ServerLabel names our MCP server in provider requests and events.
const ServerLabel = "mirobody"

// DefaultPrompt is the Base system prompt when PROMPT_BASE is empty.
const DefaultPrompt = `You are Mirobody's Base agent: a careful assistant that answers with the tools of the "mirobody" MCP server, which work on the user's own data.
Today is {{.Date}}{{if .Timezone}} ({{.Timezone}}){{end}}.{{if .Language}} Answer in {{.Language}}.{{end}}
{{- with .Profile}}
About the user:{{range $k, $v := .}}
- {{$k}}: {{$v}}{{end}}
{{- end}}
Use the tools when the question needs the user's data or a computation; say so plainly when no tool fits.`

// ParsePrompt parses a prompt template; empty text means DefaultPrompt.
func ParsePrompt(text string) (*template.Template, error) {
	return turn.ParsePrompt(text, DefaultPrompt)
}

// Options configures the agent; one Agent serves every turn.
type Options struct {
	// MCPURL is our /mcp as the provider reaches it (MCP_PUBLIC_URL + "/mcp").
	MCPURL string
	// Prompt renders the system prompt from PromptData.
	Prompt *template.Template
	// MaxSteps bounds the provider's tool calls in one turn.
	MaxSteps int
	// MaxResultChars bounds a tool result as shown and saved; the provider
	// has already seen it whole.
	MaxResultChars int
	Log            *slog.Logger
}

// Agent runs Base turns; it implements turn.Agent.
type Agent struct {
	opts Options
	log  *slog.Logger
}

// New returns an Agent.
func New(opts Options) *Agent {
	if opts.MaxSteps <= 0 {
		opts.MaxSteps = 50
	}
	if opts.MaxResultChars <= 0 {
		opts.MaxResultChars = 20000
	}
	return &Agent{opts: opts, log: opts.Log}
}

// Run implements turn.Agent.
func (a *Agent) Run(ctx context.Context, t *turn.Turn) (*turn.Outcome, error) {
	if t.Remote == nil {
		return nil, wire.Errorf(wire.FailedPrecondition, "the Base agent needs an openai-responses or anthropic provider")
	}
	if t.MCPToken == "" {
		return nil, wire.Errorf(wire.FailedPrecondition, "a Base turn needs an MCP token from the gateway")
	}
	prompt := cmp.Or(t.Prompt, a.opts.Prompt)
	if prompt == nil {
		var err error
		if prompt, err = ParsePrompt(""); err != nil {
			return nil, err
		}
	}
	system, err := turn.RenderPrompt(prompt, t.PromptData)
	if err != nil {
		return nil, err
	}
	msgs := append(append([]llm.Message(nil), t.History...), t.UserMessage())
	req := &llm.MCPRequest{Model: t.Model, System: system, Messages: msgs, MaxSteps: a.opts.MaxSteps,
		Server: llm.MCPServer{Label: ServerLabel, URL: a.opts.MCPURL, Token: t.MCPToken}}
	resp, err := t.Remote.StreamMCP(ctx, req, func(ev llm.MCPEvent) { a.forward(t, ev) })
	if err != nil {
		// Nothing of a failed provider turn is kept but the question.
		return &turn.Outcome{Messages: msgs, Finish: a.fail(ctx, t, err)}, nil
	}
	t.Emit(agent.Event{Type: agent.EventUsage, InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens,
		CacheReadTokens: resp.Usage.CacheReadTokens, CacheWriteTokens: resp.Usage.CacheWriteTokens})
	if resp.StopReason == "length" {
		t.Emit(agent.Event{Type: agent.EventNotice, Message: "the answer was cut at the provider's output limit"})
	}
	for i := range resp.Messages {
		if m := &resp.Messages[i]; m.Role == llm.RoleTool {
			m.Content, _ = a.cap(m.Content)
		}
	}
	out := &turn.Outcome{Messages: append(msgs, resp.Messages...), Answer: resp.Answer, Finish: agent.FinishStop, Usage: resp.Usage}
	if resp.Answer == "" {
		out.Finish = agent.FinishEmpty
	}
	return out, nil
}

// forward maps a provider event to the chat vocabulary.
func (a *Agent) forward(t *turn.Turn, ev llm.MCPEvent) {
	switch {
	case ev.Reasoning != "":
		t.Emit(agent.Event{Type: agent.EventReasoning, Reasoning: ev.Reasoning})
		if ev.Text != "" {
			t.Emit(agent.Event{Type: agent.EventText, Text: ev.Text})
		}
	case ev.Text != "":
		t.Emit(agent.Event{Type: agent.EventText, Text: ev.Text})
	case ev.Call != nil:
		t.Emit(agent.Event{Type: agent.EventToolCall, ID: ev.Call.ID, Name: ev.Call.Name, Args: ev.Call.Args})
	case ev.Result != nil:
		content, truncated := a.cap(ev.Result.Content)
		status := agent.StatusOK
		if ev.Result.IsError {
			status = agent.StatusError
		}
		t.Emit(agent.Event{Type: agent.EventToolResult, ToolCallID: ev.Result.CallID, Content: content, Status: status, Truncated: truncated})
	}
}

func (a *Agent) cap(s string) (string, bool) {
	r := []rune(s)
	if len(r) <= a.opts.MaxResultChars {
		return s, false
	}
	return string(r[:a.opts.MaxResultChars]) + "\n[result truncated]", true
}

// fail reports err as an error event and returns the finish reason. A
// provider that cannot reach our /mcp is told apart: that is a deployment
// problem (MCP_PUBLIC_URL), not a model one.
func (a *Agent) fail(ctx context.Context, t *turn.Turn, err error) string {
	var le *llm.Error
	if errors.As(err, &le) && le.Kind == llm.KindMCPUnreachable {
		a.log.Warn("the Base provider could not reach /mcp", "mcp_url", a.opts.MCPURL, "err", err)
		t.Emit(agent.Event{Type: agent.EventError, Message: fmt.Sprintf("%s: the model provider could not reach Mirobody's MCP endpoint %s: MCP_PUBLIC_URL must be a public URL the provider can reach", le.Public(), a.opts.MCPURL)})
		return agent.FinishError
	}
	msg, finish := turn.Failure(ctx, err, a.log)
	if msg != "" {
		t.Emit(agent.Event{Type: agent.EventError, Message: msg})
	}
	return finish
}
