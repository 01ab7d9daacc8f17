package deep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/agent-svc/internal/turn"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Where evicted results and summarized history go in the session's files.
const (
	LargeResultsDir = "/large_tool_results/"
	TranscriptPath  = "/conversation_history/transcript.jsonl"
)

// DefaultPrompt is the Deep system prompt when PROMPT_DEEP is empty.
const DefaultPrompt = `You are Mirobody's Deep agent: a careful assistant that works with tools on the user's own data.
Today is {{.Date}}{{if .Timezone}} ({{.Timezone}}){{end}}.{{if .Language}} Answer in {{.Language}}.{{end}}
{{- with .Profile}}
About the user:{{range $k, $v := .}}
- {{$k}}: {{$v}}{{end}}
{{- end}}

How to work:
- Plan work of three or more steps with write_todos and keep the list current.
- You have a filesystem: ls, read_file, write_file, edit_file, glob, grep. Files under /memories/ persist across this user's sessions; keep durable facts there. /skills/ is read-only. Other paths belong to this session.
- Large tool results are saved under /large_tool_results/ with a preview; page through them with read_file.
- Delegate self-contained research to a subagent with task.
- Use js_eval to compute, or to call several tools from code with await tools.<name>(args).
{{- with .Skills}}

Skills: read /skills/<name>/SKILL.md before you follow one.
{{- range .}}
- {{.Name}}: {{.Description}}{{end}}
{{- end}}`

// ParsePrompt parses a prompt template; empty text means DefaultPrompt.
func ParsePrompt(text string) (*template.Template, error) {
	return turn.ParsePrompt(text, DefaultPrompt)
}

func renderPrompt(t *template.Template, d turn.PromptData) (string, error) {
	if t == nil {
		var err error
		if t, err = ParsePrompt(""); err != nil {
			return "", err
		}
	}
	return turn.RenderPrompt(t, d)
}

// previewChars is the size of the head and of the tail an evicted result
// keeps in context.
const previewChars = 1500

// evict writes a large result to the session's files and keeps a preview.
func (r *run) evict(ctx context.Context, tc llm.ToolCall, res result) result {
	id := tc.ID
	if id == "" {
		id = fmt.Sprintf("%s-%d", tc.Name, time.Now().UnixNano())
	}
	path := LargeResultsDir + safeName(id)
	if _, err := r.a.opts.FS.Write(ctx, &files.WriteRequest{Scope: r.scope(), Path: path, Content: res.content, Overwrite: true}); err != nil {
		// Without the file, a cut result is the honest fallback.
		r.a.log.Warn("evicting a large tool result failed", "tool", tc.Name, "err", err)
		res.content = cutRunes(res.content, r.a.opts.EvictChars, true) + "\n[result truncated]"
		res.truncated = true
		return res
	}
	lines := strings.Count(res.content, "\n") + 1
	head, tail := cutRunes(res.content, previewChars, true), cutRunes(res.content, previewChars, false)
	res.content = fmt.Sprintf("The result of %s was too large for the context (%d characters, %d lines) and was saved to %s.\nRead it with read_file (offset/limit) or search it with grep.\n\n--- head ---\n%s\n...\n--- tail ---\n%s",
		tc.Name, len(res.content), lines, path, head, tail)
	res.truncated = true
	return res
}

func safeName(s string) string {
	return strings.Map(func(c rune) rune {
		if c == '-' || c == '_' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') {
			return c
		}
		return '_'
	}, s)
}

func cutRunes(s string, n int, head bool) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if head {
		return string(r[:n])
	}
	return string(r[len(r)-n:])
}

// estimateTokens is a cheap size estimate (four bytes a token) used only to
// decide when to summarize.
func estimateTokens(system string, msgs []llm.Message, tools []llm.Tool) int {
	n := len(system)
	for _, m := range msgs {
		n += len(m.Content) + len(m.Reasoning) + 16
		for _, tc := range m.ToolCalls {
			n += len(tc.Name) + len(tc.Args)
		}
	}
	for _, t := range tools {
		n += len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	return n / 4
}

// keepRecent is how many recent messages summarization keeps verbatim.
const keepRecent = 6

// maybeSummarize replaces older messages by a summary when the context
// nears the model's limit. The replaced messages are appended to the
// session's transcript file first, so the full history survives.
func (r *run) maybeSummarize(ctx context.Context, defs []llm.Tool) error {
	limit := r.a.opts.ContextTokens * 85 / 100
	size := estimateTokens(r.system, r.messages, defs)
	if r.lastInput > 0 {
		// The last step's reported size plus an estimate of what it added.
		size = max(size, int(r.lastInput)+estimateTokens("", r.messages[max(len(r.messages)-2, 0):], nil))
	}
	if size < limit || len(r.messages) <= keepRecent+1 {
		return nil
	}
	// Cut before an assistant message, so that no tool result loses its call.
	cut := len(r.messages) - keepRecent
	for cut > 0 && r.messages[cut].Role != llm.RoleAssistant {
		cut--
	}
	if cut <= 1 {
		return nil
	}
	old := r.messages[:cut]
	if err := r.appendTranscript(ctx, old); err != nil {
		return err
	}
	var b strings.Builder
	for _, m := range old {
		switch {
		case m.Role == llm.RoleTool:
			fmt.Fprintf(&b, "[tool result %s]: %s\n", m.ToolName, cutRunes(m.Content, 2000, true))
		case len(m.ToolCalls) > 0:
			for _, tc := range m.ToolCalls {
				fmt.Fprintf(&b, "[assistant called %s %s]\n", tc.Name, cutRunes(string(tc.Args), 500, true))
			}
			if m.Content != "" {
				fmt.Fprintf(&b, "assistant: %s\n", m.Content)
			}
		default:
			fmt.Fprintf(&b, "%s: %s\n", m.Role, m.Content)
		}
	}
	req := &llm.Request{Model: r.turn.Model,
		System:   "You summarize conversations between a user and an AI agent so that the agent can continue the work. Keep every fact, number, file path, decision and open task. Be concise.",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "Summarize this conversation so far:\n\n" + b.String()}}}
	resp, err := r.turn.Provider.Stream(ctx, req, func(llm.Delta) {})
	if err != nil {
		return fmt.Errorf("summarizing the conversation: %w", err)
	}
	r.addUsage(resp.Usage)
	summary := llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("[Summary of the earlier conversation; the full transcript is in %s]\n%s", TranscriptPath, resp.Message.Content)}
	r.messages = append([]llm.Message{summary}, r.messages[cut:]...)
	r.lastInput = 0
	r.emit(agent.Event{Type: agent.EventNotice, Message: fmt.Sprintf("the conversation was summarized to fit the context; the full transcript is in %s", TranscriptPath)})
	return nil
}

// appendTranscript appends messages, one JSON object a line, to the
// session's transcript file.
func (r *run) appendTranscript(ctx context.Context, msgs []llm.Message) error {
	var prev string
	var version int64
	resp, err := r.a.opts.FS.Read(ctx, &files.ReadRequest{Scope: r.scope(), Path: TranscriptPath, Bytes: true, Limit: files.MaxReadBytes})
	switch {
	case err == nil:
		prev, version = resp.Content, resp.Version
	case errors.Is(err, &wire.Error{Code: wire.NotFound}):
	default:
		return fmt.Errorf("reading the transcript: %w", err)
	}
	var b strings.Builder
	b.WriteString(prev)
	for _, m := range msgs {
		line, _ := json.Marshal(m)
		b.Write(line)
		b.WriteByte('\n')
	}
	if _, err := r.a.opts.FS.Write(ctx, &files.WriteRequest{Scope: r.scope(), Path: TranscriptPath, Content: b.String(), Overwrite: true, ExpectedVersion: version}); err != nil {
		return fmt.Errorf("writing the transcript: %w", err)
	}
	return nil
}
