package registrysvc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/mirobody/mirobody-go/registry-svc/internal/builtin"
	"github.com/mirobody/mirobody-go/registry-svc/internal/pyhost"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/wire"
)

// BuiltinDir is the reserved MCP_TOOL_DIRS entry for the Go built-ins.
const BuiltinDir = "builtin"

// entry is one registered tool.
type entry struct {
	tool    registry.Tool
	valid   *validator
	builtin *builtin.Tool // nil for Python and external tools
	ext     *extTool      // set for a tool of an external MCP server
	// retry allows one more attempt when the host died during the call:
	// the tool's annotations say it is idempotent or read-only.
	retry bool
}

// snapshot is one immutable tool set; a reload builds a new one and swaps it.
type snapshot struct {
	byName   map[string]*entry
	sorted   []*entry
	pool     *pyhost.Pool // nil when no Python folder is configured
	failed   []string     // Python files that failed to import
	revision string
	lists    *listCache // encoded list replies of this snapshot
	// resources and prompts are the Python modules' RESOURCES and PROMPTS
	// (resources.go).
	resources []pyhost.ResourceInfo
	prompts   []registry.Prompt
}

// buildSnapshot merges the built-ins and the discovered Python tools in
// MCP_TOOL_DIRS order: the first folder wins a name, and every loser is logged
// with both locations (registry-svc/design.md "Tool discovery", name
// collisions). pyDirs are the absolute Python folders in the order given to the
// host.
func buildSnapshot(dirs []string, builtins []*builtin.Tool, pyTools []pyhost.ToolInfo, pool *pyhost.Pool, log *slog.Logger) *snapshot {
	s := &snapshot{byName: map[string]*entry{}, pool: pool}
	add := func(e *entry) {
		if prev, ok := s.byName[e.tool.Name]; ok {
			log.Warn("tool name collision; the first one wins", "tool", e.tool.Name, "kept", prev.tool.Source, "ignored", e.tool.Source)
			return
		}
		v, err := newValidator(e.tool.Name, e.tool.InputSchema)
		if err != nil {
			log.Error("tool has an invalid input schema; it is skipped", "tool", e.tool.Name, "source", e.tool.Source, "err", err)
			return
		}
		e.valid = v
		e.retry = registry.Repeatable(e.tool.Annotations)
		s.byName[e.tool.Name] = e
	}
	for _, d := range dirs {
		if d == BuiltinDir {
			for _, b := range builtins {
				add(&entry{builtin: b, tool: registry.Tool{Name: b.Name, Description: b.Description, InputSchema: b.InputSchema,
					Annotations: b.Annotations, RequiresData: b.RequiresData, TakesUserInfo: b.TakesUserInfo, Source: BuiltinDir}})
			}
			continue
		}
		for _, t := range pyTools {
			file := t.Source
			if i := strings.LastIndexByte(file, ':'); i >= 0 {
				file = file[:i]
			}
			if filepath.Dir(file) != d {
				continue
			}
			add(&entry{tool: registry.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema,
				Annotations: t.Annotations, Meta: t.Meta, Execution: t.Execution, TaskAfterInput: t.TaskAfterInput, RequiresData: t.RequiresData, TakesUserInfo: t.TakesUserInfo, Source: t.Source}})
		}
	}
	h := sha256.New()
	for _, e := range s.byName {
		s.sorted = append(s.sorted, e)
	}
	sort.Slice(s.sorted, func(i, j int) bool { return s.sorted[i].tool.Name < s.sorted[j].tool.Name })
	for _, e := range s.sorted {
		b, _ := json.Marshal(e.tool)
		h.Write(b)
	}
	s.revision = hex.EncodeToString(h.Sum(nil))[:16]
	s.lists = newListCache(s.sorted)
	return s
}

// Registry answers list and call over one swappable snapshot.
type Registry struct {
	log      *slog.Logger
	policy   *policy
	ext      *external // nil: no external MCP servers
	deps     *builtin.Deps
	pub      *wire.Client // publishes progress events
	tracer   trace.Tracer
	metrics  *toolMetrics                    // nil: not recorded
	audit    *auditor                        // nil: not audited
	timeout  func(name string) time.Duration // a tool's deadline (conf.Config.ToolTimeout)
	mu       sync.RWMutex
	snap     *snapshot
	cancelMu sync.Mutex
	cancels  map[callKey]context.CancelCauseFunc
}

// callKey is a call in flight as a cancellation names it: its caller's
// account ("" for anonymous) and its call id. The account is part of the
// key, so that one account can never cancel (or shadow) another's call,
// whatever call id it sends.
type callKey struct{ account, id string }

// errCancelled is the cause of a call cancelled through registry.calls.cancel.
var errCancelled = errors.New("cancelled by the caller")

func (r *Registry) current() *snapshot {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.snap
}

// swap installs s and returns the previous snapshot.
func (r *Registry) swap(s *snapshot) *snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.snap
	r.snap = s
	return old
}

// listFor applies the policy to every tool of s for c with data kinds kinds.
func (r *Registry) listFor(s *snapshot, c registry.Caller, kinds map[string]bool) *registry.ListResponse {
	out := make([]registry.Tool, 0, len(s.sorted))
	for _, e := range s.sorted {
		if r.policy.decide(c, e.tool.Name, e.tool.RequiresData, kinds) == visible {
			out = append(out, e.tool)
		}
	}
	return &registry.ListResponse{Tools: out, Revision: s.revision}
}

// callerKinds probes the account's data kinds when any tool is gated.
func (r *Registry) callerKinds(ctx context.Context, c registry.Caller, tools []*entry) map[string]bool {
	if c.Anonymous() {
		return nil
	}
	for _, e := range tools {
		if e.tool.RequiresData != "" {
			return r.policy.kinds.get(ctx, c.AccountID)
		}
	}
	return nil
}

// Call validates and runs one tool for the caller.
func (r *Registry) Call(ctx context.Context, req *registry.CallRequest) (resp *registry.CallResponse, err error) {
	began := time.Now()
	s := r.current()
	e, ok := s.byName[req.Name]
	if !ok {
		if e = r.externalTool(ctx, req); e == nil {
			// Not counted: the name is the caller's, so not a bounded label.
			return nil, wire.Errorf(wire.NotFound, "unknown tool %q", req.Name)
		}
	}
	// Rejected calls count too, with their code as the outcome.
	defer func() {
		d := time.Since(began)
		r.metrics.observe(e, d, resp, err)
		r.audit.record(auditCall{at: began, caller: req.Caller, tool: req.Name, outcome: outcomeOf(resp, err),
			duration: d, args: req.Arguments, result: resultSize(resp)})
	}()
	var kinds map[string]bool
	if e.tool.RequiresData != "" {
		kinds = r.callerKinds(ctx, req.Caller, []*entry{e})
	}
	d := r.policy.decide(req.Caller, e.tool.Name, e.tool.RequiresData, kinds)
	if d == hidden {
		return nil, wire.Errorf(wire.NotFound, "unknown tool %q", req.Name)
	}
	if req.Caller.Anonymous() && (e.tool.TakesUserInfo || e.tool.RequiresData != "") {
		return nil, wire.Errorf(wire.Unauthenticated, "tool %s needs an authenticated caller", req.Name)
	}
	// An external tool's server validates against its own schema, so the
	// registry only requires what every tool call does.
	check := registry.Arguments
	if e.valid != nil {
		check = e.valid.check
	}
	args, err := check(req.Name, req.Arguments)
	if err != nil {
		return nil, err
	}
	if d == noData {
		return textResult(fmt.Sprintf("No %s data exists for this account yet, so %s has nothing to return. "+
			"Import %s data first (upload an export file in the Mirobody web app or through the data import API), then try again.",
			e.tool.RequiresData, req.Name, e.tool.RequiresData), false), nil
	}
	user := builtin.UserInfo{Success: true, UserID: req.Caller.AccountID, SessionID: req.Caller.SessionID}

	// The tool's own deadline, kept clear of the caller's: the "timed out"
	// result must reach the caller before it stops waiting.
	ctx, cancel := context.WithDeadlineCause(ctx, registry.ToolDeadline(ctx, time.Now(), r.timeout(req.Name)), context.DeadlineExceeded)
	defer cancel()
	ctx, cancelCall := context.WithCancelCause(ctx)
	defer cancelCall(nil)
	if req.CallID != "" {
		k := callKey{req.Caller.AccountID, req.CallID}
		r.track(k, cancelCall)
		defer r.untrack(k)
	}

	ctx, span := r.tracer.Start(ctx, "tool "+req.Name, trace.WithAttributes(
		attribute.String("mirobody.tool", req.Name), attribute.Bool("mirobody.tool.builtin", e.builtin != nil), attribute.Bool("mirobody.tool.external", e.ext != nil)))
	defer span.End()
	start := time.Now()
	resp, err = r.run(ctx, s, e, req, args, user)
	if ctx.Err() != nil && (err != nil || resp == nil || resp.IsError) {
		if errors.Is(context.Cause(ctx), errCancelled) {
			resp, err = textResult(fmt.Sprintf("%s was cancelled", req.Name), true), nil
		} else {
			r.log.WarnContext(ctx, "tool call timed out", "tool", req.Name, "duration_ms", time.Since(start).Milliseconds())
			resp, err = textResult(fmt.Sprintf("%s timed out after %s", req.Name, time.Since(start).Round(time.Millisecond)), true), nil
		}
	}
	switch {
	case err != nil:
		span.SetStatus(codes.Error, string(wire.CodeOf(err)))
	case resp.IsError:
		span.SetAttributes(attribute.Bool("mirobody.tool.is_error", true))
	}
	r.log.DebugContext(ctx, "tool call finished", "tool", req.Name, "duration_ms", time.Since(start).Milliseconds(), "is_error", resp != nil && resp.IsError, "err", err)
	return resp, err
}

// run executes a validated call of e.
func (r *Registry) run(ctx context.Context, s *snapshot, e *entry, req *registry.CallRequest, args json.RawMessage, user builtin.UserInfo) (*registry.CallResponse, error) {
	if e.ext != nil {
		// Nothing of the caller (user_info, Mirobody credentials) goes to
		// an external server: only the arguments.
		return e.ext.conn.call(ctx, e.ext, args)
	}
	if e.builtin == nil {
		opts := &pyhost.CallOptions{Capabilities: req.ClientCapabilities, Inputs: req.InputResponses, Replay: req.Replay}
		if e.tool.TakesUserInfo {
			opts.UserInfo = user
		}
		if req.ProgressSubject != "" && r.pub != nil {
			publish := r.progress(req.ProgressSubject)
			opts.Progress = func(progress, total float64, message string) { publish(ctx, progress, total, message) }
			opts.Log, opts.LogLevel = r.logs(ctx, req.ProgressSubject), req.LogLevel
		}
		resp, err := r.callPython(ctx, s, req.Name, args, opts)
		if err == pyhost.ErrHostStopped && e.retry && ctx.Err() == nil {
			r.log.WarnContext(ctx, "tool host stopped during an idempotent call; retrying once", "tool", req.Name)
			return r.callPython(ctx, r.current(), req.Name, args, opts)
		}
		return resp, err
	}
	breq := &builtin.Request{Args: args, Deps: r.deps, Progress: r.progress(req.ProgressSubject)}
	if e.tool.TakesUserInfo {
		breq.User = user
	}
	v, cerr := e.builtin.Call(ctx, breq)
	resp, err := builtinResult(req.Name, v, cerr)
	if err != nil && resp != nil {
		if ctx.Err() == nil {
			r.log.ErrorContext(ctx, "built-in tool failed", "tool", req.Name, "err", err)
		}
		err = nil
	}
	return resp, err
}

// callPython runs a Python tool. A snapshot retired by a reload between the
// lookup and the call answers unavailable; the call then goes to the current
// snapshot's pool, once.
func (r *Registry) callPython(ctx context.Context, s *snapshot, name string, args json.RawMessage, opts *pyhost.CallOptions) (*registry.CallResponse, error) {
	if s.pool == nil {
		return nil, wire.Errorf(wire.Unavailable, "no Python tool host is running")
	}
	resp, err := s.pool.CallWith(ctx, name, args, opts)
	if cur := r.current(); err == pyhost.ErrClosed && cur != s && cur.pool != nil {
		if _, ok := cur.byName[name]; ok {
			return cur.pool.CallWith(ctx, name, args, opts)
		}
	}
	return resp, err
}

// progress returns a reporter that publishes ProgressEvents to subject, or
// does nothing when subject is empty.
func (r *Registry) progress(subject string) func(ctx context.Context, progress, total float64, message string) {
	if subject == "" || r.pub == nil {
		return func(context.Context, float64, float64, string) {}
	}
	return func(ctx context.Context, progress, total float64, message string) {
		ev := &registry.ProgressEvent{Progress: progress, Total: total, Message: message}
		if err := registry.Progress.On(subject).Publish(ctx, r.pub, ev); err != nil {
			r.log.WarnContext(ctx, "publishing tool progress failed", "subject", subject, "err", err)
		}
	}
}

// logs returns a reporter that publishes a tool's log records to subject,
// on the progress path, so that they keep their order with progress and
// arrive before the reply.
func (r *Registry) logs(ctx context.Context, subject string) pyhost.LogFunc {
	return func(rec *registry.LogRecord) {
		if err := registry.Progress.On(subject).Publish(ctx, r.pub, &registry.ProgressEvent{Log: rec}); err != nil {
			r.log.WarnContext(ctx, "publishing a tool log record failed", "subject", subject, "err", err)
		}
	}
}

func (r *Registry) track(k callKey, cancel context.CancelCauseFunc) {
	r.cancelMu.Lock()
	r.cancels[k] = cancel
	r.cancelMu.Unlock()
}

func (r *Registry) untrack(k callKey) {
	r.cancelMu.Lock()
	delete(r.cancels, k)
	r.cancelMu.Unlock()
}

// cancelCall cancels the call of ev, if this replica runs it for the
// account ev names.
func (r *Registry) cancelCall(ev *registry.CancelEvent) {
	r.cancelMu.Lock()
	cancel := r.cancels[callKey{ev.AccountID, ev.CallID}]
	r.cancelMu.Unlock()
	if cancel != nil {
		cancel(errCancelled)
	}
}
