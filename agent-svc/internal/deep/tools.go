package deep

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/mirobody/mirobody-go/agent-svc/internal/jsrepl"
	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/agent-svc/internal/turn"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/wire"
)

// tool is one tool the model may call.
type tool struct {
	def llm.Tool
	run func(ctx context.Context, r *run, args json.RawMessage) result
	// noEvict keeps results in context whatever their size (read_file
	// pages itself, and evicting it would loop).
	noEvict bool
	// inREPL makes the tool callable from js_eval.
	inREPL bool
	// remote marks a registry tool (run by registry-svc, not by the agent).
	remote bool
}

// result is a tool's answer.
type result struct {
	content   string
	isError   bool
	kind      string
	truncated bool
	// asking says the call stopped at a question to the user (r.asks):
	// it has no result yet.
	asking bool
}

func (r result) status() string {
	switch {
	case r.isError:
		return agent.StatusError
	case r.truncated:
		return agent.StatusPartial
	}
	return agent.StatusOK
}

func errResult(kind, msg string) result { return result{content: msg, isError: true, kind: kind} }

func okResult(s string) result { return result{content: s} }

// wireResult turns a failed call to another service into a tool error the
// model can act on.
func wireResult(err error) result {
	code := wire.CodeOf(err)
	var we *wire.Error
	if errors.As(err, &we) && code != wire.Internal {
		return errResult(string(code), we.Message)
	}
	return errResult(string(code), "the call failed ("+string(code)+")")
}

func schema(s string) json.RawMessage { return json.RawMessage(s) }

// toolset is, in order: the registry's tools for the caller, write_todos,
// the filesystem, task (top level only) and js_eval.
func (a *Agent) toolset(ctx context.Context, t *turn.Turn, top bool) ([]*tool, error) {
	own := []*tool{todosTool()}
	own = append(own, fsTools()...)
	if top {
		own = append(own, a.taskTool())
	}
	own = append(own, jsTool())
	own = slices.DeleteFunc(own, func(o *tool) bool { return !a.ownVisible(o.def.Name) })
	taken := map[string]bool{}
	for _, o := range own {
		taken[o.def.Name] = true
	}
	var out []*tool
	if a.opts.Registry != nil {
		list, err := a.opts.Registry.List(ctx, &registry.ListRequest{Caller: caller(t), Servers: t.MCPServers})
		if err != nil {
			return nil, fmt.Errorf("listing registry tools: %w", err)
		}
		for _, rt := range list.Tools {
			if taken[rt.Name] {
				a.log.Warn("a registry tool is shadowed by a Deep agent tool", "tool", rt.Name)
				continue
			}
			out = append(out, registryTool(rt))
		}
	}
	return append(out, own...), nil
}

// ownVisible reports whether an own tool passes the Deep agent's lists.
func (a *Agent) ownVisible(name string) bool {
	if len(a.opts.Allowed) > 0 && !slices.Contains(a.opts.Allowed, name) {
		return false
	}
	return !slices.Contains(a.opts.Disallowed, name)
}

func caller(t *turn.Turn) registry.Caller {
	return registry.Caller{AccountID: t.AccountID, SessionID: t.SessionID, Agent: agent.AgentDeep}
}

func registryTool(rt registry.Tool) *tool {
	in := rt.InputSchema
	if len(in) == 0 {
		in = schema(`{"type":"object"}`)
	}
	if rt.TakesUserInfo {
		in = withoutUserInfo(in)
	}
	return &tool{def: llm.Tool{Name: rt.Name, Description: rt.Description, InputSchema: in}, inREPL: true, remote: true,
		run: func(ctx context.Context, r *run, args json.RawMessage) result {
			resp, err := r.callRegistry(ctx, rt.Name, args)
			if errors.Is(err, errAsking) {
				return result{asking: true}
			}
			if err != nil {
				return wireResult(err)
			}
			res := result{content: contentText(resp), isError: resp.IsError}
			if resp.IsError {
				res.kind = "tool_error"
			}
			return res
		}}
}

// withoutUserInfo hides user_info from the model: the registry injects it.
func withoutUserInfo(s json.RawMessage) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(s, &m) != nil {
		return s
	}
	if props, ok := m["properties"].(map[string]any); ok {
		delete(props, "user_info")
	}
	if req, ok := m["required"].([]any); ok {
		kept := req[:0]
		for _, x := range req {
			if x != "user_info" {
				kept = append(kept, x)
			}
		}
		m["required"] = kept
	}
	out, _ := json.Marshal(m)
	return out
}

// contentText joins the text blocks of an MCP result, falling back to its
// structured content.
func contentText(resp *registry.CallResponse) string {
	var parts []string
	for _, c := range resp.Content {
		parts = append(parts, blockText(c))
	}
	if len(parts) == 0 && len(resp.StructuredContent) > 0 {
		return string(resp.StructuredContent)
	}
	return strings.Join(parts, "\n")
}

// blockText renders one MCP content block for the model. Binary payloads
// (images, audio, blobs) are described, not pasted: their base64 would
// cost tokens and tell a text model nothing.
func blockText(c json.RawMessage) string {
	var b struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     string `json:"data"`
		MimeType string `json:"mimeType"`
		URI      string `json:"uri"`
		Name     string `json:"name"`
		Resource *struct {
			URI      string `json:"uri"`
			MimeType string `json:"mimeType"`
			Text     string `json:"text"`
			Blob     string `json:"blob"`
		} `json:"resource"`
	}
	if json.Unmarshal(c, &b) != nil {
		return string(c)
	}
	switch {
	case b.Type == "text":
		return b.Text
	case b.Type == "image" || b.Type == "audio":
		return fmt.Sprintf("[%s %s, %d bytes, not shown]", b.Type, b.MimeType, b64Len(b.Data))
	case b.Type == "resource" && b.Resource != nil && b.Resource.Blob != "":
		return fmt.Sprintf("[resource %s %s, %d bytes, not shown]", b.Resource.URI, b.Resource.MimeType, b64Len(b.Resource.Blob))
	case b.Type == "resource" && b.Resource != nil:
		return fmt.Sprintf("[resource %s]\n%s", b.Resource.URI, b.Resource.Text)
	case b.Type == "resource_link":
		return fmt.Sprintf("[resource link %s: %s]", b.Name, b.URI)
	}
	return string(c)
}

// b64Len is the decoded size of standard base64 text, without decoding it.
func b64Len(s string) int { return base64.RawStdEncoding.DecodedLen(len(strings.TrimRight(s, "="))) }

func todosTool() *tool {
	return &tool{def: llm.Tool{Name: "write_todos",
		Description: "Write the plan for this task as a todo list, replacing the previous list. Use it for work of three or more steps; mark an item in_progress before you start it and completed as soon as it is done.",
		InputSchema: schema(`{"type":"object","properties":{"todos":{"type":"array","items":{"type":"object","properties":{"content":{"type":"string"},"status":{"type":"string","enum":["pending","in_progress","completed"]}},"required":["content","status"]}}},"required":["todos"]}`)},
		run: func(_ context.Context, r *run, args json.RawMessage) result {
			var a struct {
				Todos []agent.Todo `json:"todos"`
			}
			if err := json.Unmarshal(args, &a); err != nil {
				return errResult("invalid_argument", "todos must be a list of {content, status}")
			}
			for _, t := range a.Todos {
				if t.Status != "pending" && t.Status != "in_progress" && t.Status != "completed" {
					return errResult("invalid_argument", fmt.Sprintf("todo %q has status %q; use pending, in_progress or completed", t.Content, t.Status))
				}
			}
			r.emit(agent.Event{Type: agent.EventTodos, Items: append([]agent.Todo{}, a.Todos...)})
			b, _ := json.Marshal(a.Todos)
			return okResult("Updated the todo list: " + string(b))
		}}
}

const generalPurpose = "general-purpose"

func (a *Agent) taskTool() *tool {
	names := []string{generalPurpose}
	desc := []string{"- general-purpose: a capable agent with the same tools as you, for research and multi-step work"}
	keys := make([]string, 0, len(a.opts.Subagents))
	for k := range a.opts.Subagents {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		names = append(names, k)
		desc = append(desc, "- "+k+": "+a.opts.Subagents[k].Description)
	}
	enum, _ := json.Marshal(names)
	return &tool{def: llm.Tool{Name: "task",
		Description: "Delegate a self-contained task to a subagent that works in its own context and returns one final report. Describe the task fully: the subagent sees nothing of this conversation. Subagents:\n" + strings.Join(desc, "\n"),
		InputSchema: schema(`{"type":"object","properties":{"description":{"type":"string"},"subagent_type":{"type":"string","enum":` + string(enum) + `}},"required":["description"]}`)},
		run: func(ctx context.Context, r *run, args json.RawMessage) result {
			var in struct {
				Description  string `json:"description"`
				SubagentType string `json:"subagent_type"`
			}
			if err := json.Unmarshal(args, &in); err != nil || in.Description == "" {
				return errResult("invalid_argument", "task needs a description")
			}
			return r.subagent(ctx, in.SubagentType, in.Description)
		}}
}

// subagent runs a nested loop with its own context and returns its answer.
func (r *run) subagent(ctx context.Context, kind, task string) result {
	if kind == "" {
		kind = generalPurpose
	}
	system := r.system
	if kind != generalPurpose {
		sa, ok := r.a.opts.Subagents[kind]
		if !ok {
			return errResult("not_found", fmt.Sprintf("no subagent %q", kind))
		}
		system = sa.Prompt
	}
	sub := &run{a: r.a, turn: r.turn, system: system, depth: r.depth + 1, quiet: true,
		messages: []llm.Message{{Role: llm.RoleUser, Content: task}}, results: map[string]llm.Message{}}
	tools := make([]*tool, 0, len(r.tools))
	for _, t := range r.tools {
		if t.def.Name != "task" {
			tools = append(tools, t)
		}
	}
	sub.setTools(tools)
	answer, finish := sub.loop(ctx)
	r.addUsage(sub.usage)
	if finish != agent.FinishStop {
		return errResult("subagent_"+finish, fmt.Sprintf("the %s subagent ended with %s", kind, finish))
	}
	return okResult(answer)
}

func jsTool() *tool {
	return &tool{def: llm.Tool{Name: "js_eval",
		Description: "Run JavaScript in a REPL whose state persists for this session. Call tools from code with `await tools.<name>({...})` (results are parsed JSON or text; failures throw); use Promise.all for parallel calls. console.log is captured. Code that uses await runs inside an async function: `return` its result and keep state on globalThis. Budgets per eval: time, memory, tool calls and output size. No filesystem, network or process access.",
		InputSchema: schema(`{"type":"object","properties":{"code":{"type":"string"}},"required":["code"]}`)},
		run: func(ctx context.Context, r *run, args json.RawMessage) result {
			var in struct {
				Code string `json:"code"`
			}
			if err := json.Unmarshal(args, &in); err != nil || in.Code == "" {
				return errResult("invalid_argument", "js_eval needs code")
			}
			if r.a.opts.REPL == nil {
				return errResult("unavailable", "the JavaScript REPL is not enabled")
			}
			var names []string
			for _, t := range r.tools {
				if t.inREPL {
					names = append(names, t.def.Name)
				}
			}
			key := r.turn.AccountID + "/" + r.turn.SessionID
			hadState := usedREPL(r.turn.History)
			res := r.a.opts.REPL.Eval(ctx, &jsrepl.EvalRequest{Account: r.turn.AccountID, Session: key, Code: in.Code, Tools: names,
				Call: func(ctx context.Context, name string, args json.RawMessage) (string, error) {
					out := r.callTool(ctx, llm.ToolCall{Name: name, Args: args})
					if out.isError {
						return "", fmt.Errorf("%s", out.content)
					}
					return out.content, nil
				}})
			text := res.Output
			switch {
			case res.Reset:
				text = "[note: the REPL state was reset because an earlier eval went over the memory budget; starting fresh]\n" + text
			case res.Evicted:
				text = "[note: the REPL state of this session was dropped to make room (this replica keeps at most JS_MAX_STATE_BYTES of REPL state, least recently used goes first); starting fresh]\n" + text
			case res.Fresh && hadState:
				text = "[note: the REPL state of earlier turns is gone (the session moved to another replica or expired); starting fresh]\n" + text
			}
			if res.Error != "" {
				return result{content: text + "Error: " + res.Error, isError: true, kind: "js_error", truncated: res.Truncated}
			}
			if text == "" {
				text = "(no output)"
			}
			return result{content: text, truncated: res.Truncated}
		}}
}

func usedREPL(history []llm.Message) bool {
	for _, m := range history {
		for _, tc := range m.ToolCalls {
			if tc.Name == "js_eval" {
				return true
			}
		}
	}
	return false
}
