// Package deep is the Deep agent: our own tool loop around a model
// provider, with registry tools, a planning list, a filesystem on vfs-svc,
// subagents, a JavaScript REPL, eviction of large tool results and
// summarization near the context limit (agent-svc/design.md "Chat turns").
package deep

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"text/template"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/mirobody/mirobody-go/agent-svc/internal/jsrepl"
	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/agent-svc/internal/turn"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/vfs/runs"
)

// Subagent is a configured `task` subagent.
type Subagent struct {
	Description string
	// Prompt is its system prompt.
	Prompt string
}

// Options configures the agent; one Agent serves every turn.
type Options struct {
	Registry *registry.Client
	FS       *files.FS
	REPL     *jsrepl.Store
	// Prompt renders the system prompt from PromptData.
	Prompt *template.Template
	// Subagents are the configured ones, beside general-purpose.
	Subagents map[string]Subagent
	// MaxSteps bounds the model calls of one turn (per agent level).
	MaxSteps int
	// EvictChars is the size above which a tool result goes to a file.
	EvictChars int
	// ContextTokens is the model's context size; summarization starts at
	// 85% of it.
	ContextTokens int
	// StreamRetries is how often a step whose stream broke is retried.
	StreamRetries int
	// Allowed and Disallowed are ALLOWED_TOOLS_DEEP and DISALLOWED_TOOLS_DEEP,
	// applied to the agent's own tools as the registry applies them to its
	// tools (registry-svc/design.md "Tool visibility"): when Allowed is set
	// only those, and Disallowed always wins.
	Allowed, Disallowed []string
	// Tracer records each tool call as a span (a child of the turn's span,
	// of task's for a subagent's calls, of js_eval's for the calls its code
	// makes); nil records none.
	Tracer trace.Tracer
	Log    *slog.Logger
}

// Agent runs Deep turns; it implements turn.Agent.
type Agent struct {
	opts Options
	log  *slog.Logger
}

// New returns an Agent.
func New(opts Options) *Agent {
	if opts.MaxSteps <= 0 {
		opts.MaxSteps = 50
	}
	if opts.EvictChars <= 0 {
		opts.EvictChars = 20000
	}
	if opts.ContextTokens <= 0 {
		opts.ContextTokens = 128000
	}
	if opts.StreamRetries <= 0 {
		opts.StreamRetries = 2
	}
	if opts.Tracer == nil {
		opts.Tracer = noop.NewTracerProvider().Tracer("")
	}
	return &Agent{opts: opts, log: opts.Log}
}

// run is the state of one turn (or one subagent run inside it).
type run struct {
	a        *Agent
	turn     *turn.Turn
	system   string
	tools    []*tool
	byName   map[string]*tool
	messages []llm.Message
	// mu guards usage: the tool calls of one step run in parallel.
	mu    sync.Mutex
	usage llm.Usage
	// lastInput is the provider's input token count of the last step; it
	// is a better context size than the estimate once known.
	lastInput int64
	depth     int
	// quiet suppresses text events (a subagent's text is its result).
	quiet bool
	// durable checkpoints the turn (the top level only: a subagent is one
	// tool call of its parent). nil for none.
	durable turn.Durable
	// steps counts model calls, across replicas for a resumed turn.
	steps int
	// pending is the step whose tool calls are under way, with the
	// results finished so far (a resumed turn runs only the others).
	pending   *llm.Message
	results   map[string]llm.Message
	decisions map[string]runs.Decision
	// asks are the questions of the pending step's calls to the user, by
	// call id (guarded by mu): an unanswered one pauses the run after the
	// step's other calls, an answered one goes to its tool's next run.
	asks map[string]turn.Ask
	// cache keeps the encoded request between the model calls of the run.
	cache llm.Cache
}

// Run implements turn.Agent.
func (a *Agent) Run(ctx context.Context, t *turn.Turn) (*turn.Outcome, error) {
	r := &run{a: a, turn: t, durable: t.Durable, results: map[string]llm.Message{}, decisions: map[string]runs.Decision{},
		asks: map[string]turn.Ask{}}
	if cp := t.Resume; cp != nil {
		r.messages, r.steps, r.usage, r.pending = cp.Messages, cp.Steps, cp.Usage, cp.Pending
		if r.pending != nil {
			r.steps-- // the checkpoint counts the step under way as taken
		}
		maps.Copy(r.results, cp.Results)
		maps.Copy(r.decisions, cp.Decisions)
		maps.Copy(r.asks, cp.Asks)
	} else {
		r.messages = append(append([]llm.Message(nil), t.History...), t.UserMessage())
	}
	if err := r.setup(ctx); err != nil {
		return nil, err
	}
	answer, finish := r.loop(ctx)
	return &turn.Outcome{Messages: r.messages, Answer: answer, Finish: finish, Usage: r.usage}, nil
}

func (r *run) setup(ctx context.Context) error {
	system, err := renderPrompt(cmp.Or(r.turn.Prompt, r.a.opts.Prompt), r.turn.PromptData)
	if err != nil {
		return err
	}
	r.system = system
	tools, err := r.a.toolset(ctx, r.turn, true)
	if err != nil {
		return err
	}
	r.setTools(tools)
	return nil
}

func (r *run) setTools(tools []*tool) {
	r.tools = tools
	r.byName = map[string]*tool{}
	for _, t := range tools {
		r.byName[t.def.Name] = t
	}
}

func (r *run) emit(ev agent.Event) {
	if r.quiet && (ev.Type == agent.EventText || ev.Type == agent.EventReasoning) {
		return
	}
	r.turn.Emit(ev)
}

// loop calls the model until it answers without tool calls, and returns
// the answer and the finish reason.
func (r *run) loop(ctx context.Context) (string, string) {
	defs := make([]llm.Tool, len(r.tools))
	for i, t := range r.tools {
		defs[i] = t.def
	}
	if r.pending != nil {
		// A resumed turn: the step's calls that have no result yet.
		if finish, ok := r.finishStep(ctx, *r.pending); !ok {
			return "", finish
		}
		r.steps++
	}
	for ; ; r.steps++ {
		if r.steps >= r.a.opts.MaxSteps {
			r.emit(agent.Event{Type: agent.EventError, Message: fmt.Sprintf("the turn stopped after %d model steps (MAX_STEPS) before the model finished", r.a.opts.MaxSteps)})
			return "", agent.FinishError
		}
		if err := r.maybeSummarize(ctx, defs); err != nil {
			return "", r.fail(ctx, err)
		}
		resp, err := r.callModel(ctx, defs)
		if err != nil {
			return "", r.fail(ctx, err)
		}
		r.addUsage(resp.Usage)
		r.lastInput = resp.Usage.InputTokens + resp.Usage.CacheReadTokens + resp.Usage.CacheWriteTokens
		if !r.quiet {
			r.emit(agent.Event{Type: agent.EventUsage, InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens,
				CacheReadTokens: resp.Usage.CacheReadTokens, CacheWriteTokens: resp.Usage.CacheWriteTokens})
		}
		msg := resp.Message
		if len(msg.ToolCalls) == 0 {
			r.messages = append(r.messages, msg)
			if msg.Content == "" {
				return "", agent.FinishEmpty
			}
			return msg.Content, agent.FinishStop
		}
		r.pending = &msg
		clear(r.results)
		if err := r.save(ctx); err != nil {
			return "", r.fail(ctx, err)
		}
		if finish, ok := r.finishStep(ctx, msg); !ok {
			return "", finish
		}
	}
}

// finishStep runs the tool calls of the step msg that have no result yet
// and appends the step to the history; ok is false when the turn ends.
func (r *run) finishStep(ctx context.Context, msg llm.Message) (finish string, ok bool) {
	calls := slices.Clone(msg.ToolCalls)
	for i, tc := range calls {
		if _, done := r.results[tc.ID]; done || r.durable == nil || !slices.Contains(r.turn.Interrupt, tc.Name) {
			continue
		}
		d, decided := r.decisions[tc.ID]
		if !decided {
			err := r.durable.Pause(ctx, r.checkpoint(), tc, nil)
			if errors.Is(err, turn.ErrPaused) {
				return "", false // the run says how it paused
			}
			return r.fail(ctx, err), false
		}
		switch d.Decision {
		case runs.DecisionEdit:
			calls[i].Args = d.Arguments
		case runs.DecisionReject:
			reason := cmp.Or(d.Reason, "no reason given")
			r.addResult(ctx, tc, result{content: "The user rejected this tool call: " + reason, isError: true, kind: "rejected"})
		}
	}
	var unrun []llm.ToolCall
	for _, tc := range calls {
		if _, done := r.results[tc.ID]; !done {
			unrun = append(unrun, tc)
		}
	}
	r.runTools(ctx, unrun)
	if ctx.Err() != nil {
		// The step is incomplete: keep the history without it.
		return r.fail(ctx, ctx.Err()), false
	}
	for _, tc := range msg.ToolCalls {
		r.mu.Lock()
		a, asks := r.asks[tc.ID]
		_, done := r.results[tc.ID]
		r.mu.Unlock()
		if done || !asks || a.Answer != nil {
			continue
		}
		// A tool asks the user: the step's other calls have their
		// results, and the run waits for the answer.
		err := r.durable.Pause(ctx, r.checkpoint(), tc, &a)
		if errors.Is(err, turn.ErrPaused) {
			return "", false
		}
		return r.fail(ctx, err), false
	}
	r.messages = append(r.messages, msg)
	for _, tc := range msg.ToolCalls {
		r.messages = append(r.messages, r.results[tc.ID])
	}
	r.pending = nil
	clear(r.results)
	clear(r.asks)
	return "", true
}

// checkpoint is the turn's state now; the steps counter counts the step
// under way as taken.
func (r *run) checkpoint() *turn.Checkpoint {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &turn.Checkpoint{Messages: r.messages, Pending: r.pending, Results: maps.Clone(r.results), Decisions: maps.Clone(r.decisions),
		Asks: maps.Clone(r.asks), Steps: r.steps + 1, Usage: r.usage}
}

// save checkpoints the turn, if it is durable.
func (r *run) save(ctx context.Context) error {
	if r.durable == nil {
		return nil
	}
	return r.durable.Save(ctx, r.checkpoint())
}

// addResult records a finished call of the pending step, streams it and
// checkpoints it, so that a takeover does not run the call again.
func (r *run) addResult(ctx context.Context, tc llm.ToolCall, res result) {
	r.emit(agent.Event{Type: agent.EventToolResult, ToolCallID: tc.ID, Content: res.content, Status: res.status(), ErrorKind: res.kind, Truncated: res.truncated})
	r.mu.Lock()
	r.results[tc.ID] = llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, ToolName: tc.Name, Content: res.content, IsError: res.isError}
	r.mu.Unlock()
	if ctx.Err() == nil {
		if err := r.save(ctx); err != nil {
			r.a.log.Warn("checkpointing a tool result failed", "tool", tc.Name, "err", err)
		}
	}
}

func (r *run) addUsage(u llm.Usage) {
	r.mu.Lock()
	r.usage = r.usage.Add(u)
	r.mu.Unlock()
}

// runTools runs the tool calls of one step in parallel, as the model asked
// for them together, into r.results. Each result is streamed (and
// checkpointed) as soon as it is ready; a call cancelled mid-way has none.
func (r *run) runTools(ctx context.Context, calls []llm.ToolCall) {
	r.mu.Lock()
	asked := maps.Clone(r.asks)
	r.mu.Unlock()
	for _, tc := range calls {
		// A call that asked the user was shown before the question; it
		// runs again with the answer under the same card.
		if _, ok := asked[tc.ID]; !ok {
			r.emit(agent.Event{Type: agent.EventToolCall, ID: tc.ID, Name: tc.Name, Args: tc.Args})
		}
	}
	one := func(tc llm.ToolCall) {
		res := r.callTool(ctx, tc)
		if ctx.Err() == nil && !res.asking {
			r.addResult(ctx, tc, res)
		}
	}
	if len(calls) == 1 {
		one(calls[0])
		return
	}
	var wg sync.WaitGroup
	for _, tc := range calls {
		wg.Go(func() { one(tc) })
	}
	wg.Wait()
}

// callModel streams one step, retrying a broken stream: the partial text
// was shown, so a notice says the step starts over.
func (r *run) callModel(ctx context.Context, defs []llm.Tool) (*llm.Response, error) {
	req := &llm.Request{Model: r.turn.Model, System: r.system, Messages: r.messages, Tools: defs, Cache: &r.cache}
	for attempt := 0; ; attempt++ {
		resp, err := r.turn.Provider.Stream(ctx, req, func(d llm.Delta) {
			if d.Reasoning != "" {
				r.emit(agent.Event{Type: agent.EventReasoning, Reasoning: d.Reasoning})
			}
			if d.Text != "" {
				r.emit(agent.Event{Type: agent.EventText, Text: d.Text})
			}
		})
		var le *llm.Error
		if err != nil && errors.As(err, &le) && le.Kind == "stream_broken" && attempt < r.a.opts.StreamRetries && ctx.Err() == nil {
			r.emit(agent.Event{Type: agent.EventNotice, Message: "the model's stream broke mid-way; retrying this step"})
			continue
		}
		return resp, err
	}
}

// fail reports err as an error event and returns the finish reason.
func (r *run) fail(ctx context.Context, err error) string {
	msg, finish := turn.Failure(ctx, err, r.a.log)
	if msg != "" {
		r.emit(agent.Event{Type: agent.EventError, Message: msg})
	}
	return finish
}

// callTool runs one tool call of the model, or (tc.ID empty) of js_eval,
// as an execute_tool span: ctx then carries it, so that the calls js_eval
// makes, a subagent's steps and the registry's spans are its children.
func (r *run) callTool(ctx context.Context, tc llm.ToolCall) (res result) {
	ctx, span := r.a.opts.Tracer.Start(ctx, "execute_tool "+tc.Name)
	ctx = context.WithValue(ctx, callIDKey{}, tc.ID)
	defer func() { endToolSpan(span, tc, r.byName[tc.Name], res) }()
	t, ok := r.byName[tc.Name]
	if !ok {
		return errResult("not_found", fmt.Sprintf("tool %q is not available", tc.Name))
	}
	if !json.Valid(tc.Args) {
		return errResult("invalid_argument", fmt.Sprintf("the arguments of %s are not valid JSON", tc.Name))
	}
	start := time.Now()
	res = t.run(ctx, r, tc.Args)
	r.a.log.Debug("tool ran", "tool", tc.Name, "duration_ms", time.Since(start).Milliseconds(), "is_error", res.isError)
	if !t.noEvict && len(res.content) > r.a.opts.EvictChars {
		res = r.evict(ctx, tc, res)
	}
	return res
}
