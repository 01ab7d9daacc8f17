// Package jsrepl is the Deep agent's JavaScript REPL (js_eval) on goja.
// Each session keeps one runtime in memory for a while (state persists
// across evals), `await tools.<name>(args)` calls tools through a callback
// the agent supplies, console output is captured, and every eval has
// budgets for wall time, memory, tool calls and output size. The runtime has no
// host access: goja offers no require, filesystem, network or process, and
// nothing of the host is exposed but console and tools.
package jsrepl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"
)

// Options sets the budgets and the state lifetime.
type Options struct {
	// Timeout bounds one eval's wall time, tool calls included.
	Timeout time.Duration
	// MaxToolCalls bounds the tool calls of one eval.
	MaxToolCalls int
	// MaxOutput bounds the captured output of one eval, in bytes.
	MaxOutput int
	// MaxMemory bounds the heap one session's REPL holds, its state plus
	// what the running eval allocates, in bytes (see memory.go).
	MaxMemory int64
	// TTL drops a session's state after it was unused this long.
	TTL time.Duration
	// MaxConcurrent bounds the evals running JavaScript at once; 0 means
	// the number of CPUs, at least 2.
	MaxConcurrent int
	// MaxEvalsPerAccount bounds those of one account; 0 means half of
	// MaxConcurrent (at least 1), so that one account never holds them all.
	MaxEvalsPerAccount int
	// MaxStateBytes bounds the state all sessions keep between evals; over
	// it, the least recently used sessions' state is dropped.
	MaxStateBytes int64
	// Log is required.
	Log *slog.Logger
}

// Store holds the runtimes of the sessions this replica has seen. A
// process holds one: its ledger books heap growth on the running evals.
type Store struct {
	opts Options
	// sched hands out the slots in which evals run JavaScript; evals
	// waiting for tool calls do not hold one.
	sched  *scheduler
	ledger *ledger
	// guards is guards.js, compiled.
	guards   *goja.Program
	mu       sync.Mutex
	sessions map[string]*session
	// resets remembers sessions whose state was dropped, for going over
	// the memory budget or to make room, until their next eval says so.
	resets map[string]reset
	now    func() time.Time
}

// reset is why and when a session's state was dropped.
type reset struct {
	at time.Time
	// evicted is true when the state was dropped to keep the kept state
	// within MaxStateBytes, false when its eval went over its budget.
	evicted bool
}

type session struct {
	mu   sync.Mutex
	rt   *goja.Runtime
	used time.Time
	// retained estimates the heap the session's state holds; read by
	// evictions under Store.mu without mu.
	retained atomic.Int64
	// cur is the meter of the eval in progress, for the guards.
	cur *meter
	// gone is set, under mu, when the state was dropped for a breach.
	gone bool
}

// NewStore returns an empty Store.
func NewStore(opts Options) *Store {
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.MaxToolCalls <= 0 {
		opts.MaxToolCalls = 20
	}
	if opts.MaxOutput <= 0 {
		opts.MaxOutput = 20000
	}
	if opts.TTL <= 0 {
		opts.TTL = 30 * time.Minute
	}
	if opts.MaxMemory <= 0 {
		opts.MaxMemory = 256 << 20
	}
	if opts.MaxConcurrent <= 0 {
		// At least two, so that with one per account another account
		// always has a slot; Go preempts, so two share even one CPU.
		opts.MaxConcurrent = max(runtime.NumCPU(), 2)
	}
	if opts.MaxEvalsPerAccount <= 0 {
		opts.MaxEvalsPerAccount = max(opts.MaxConcurrent/2, 1)
	}
	if opts.MaxStateBytes <= 0 {
		opts.MaxStateBytes = 2 * opts.MaxMemory
	}
	setDefaultMatchTimeout(opts.Timeout)
	return &Store{opts: opts, sched: newScheduler(opts.MaxConcurrent, opts.MaxEvalsPerAccount), ledger: newLedger(), guards: compileGuards(),
		sessions: map[string]*session{}, resets: map[string]reset{}, now: time.Now}
}

// Drop forgets a session's state (the session was deleted).
func (s *Store) Drop(key string) {
	s.mu.Lock()
	delete(s.sessions, key)
	s.mu.Unlock()
}

// Has reports whether the store holds live state for key.
func (s *Store) Has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.sessions[key]
	return ok
}

// get returns the session's runtime, creating it (fresh=true) when absent
// or expired; expired sessions of others are swept on the way. gone says
// why the previous state was dropped, if it was.
func (s *Store) get(key string) (ss *session, fresh bool, gone *reset, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k, ss := range s.sessions {
		if now.Sub(ss.used) > s.opts.TTL && ss.mu.TryLock() {
			delete(s.sessions, k)
			ss.mu.Unlock()
		}
	}
	for k, r := range s.resets {
		if now.Sub(r.at) > s.opts.TTL {
			delete(s.resets, k)
		}
	}
	if ss, ok := s.sessions[key]; ok {
		ss.used = now
		return ss, false, nil, nil
	}
	ss = &session{rt: goja.New(), used: now}
	ss.rt.SetFieldNameMapper(goja.UncapFieldNameMapper())
	// Deep recursion through native callbacks would grow the Go stack;
	// a JS RangeError is the budget instead.
	ss.rt.SetMaxCallStackSize(maxCallStack)
	if err := installGuards(ss.rt, s.guards, func() *meter { return ss.cur }); err != nil {
		return nil, false, nil, err
	}
	if r, ok := s.resets[key]; ok {
		gone = &r
	}
	delete(s.resets, key)
	s.sessions[key] = ss
	return ss, true, gone, nil
}

// dropBreached forgets a session whose eval went over the memory budget;
// ss.mu is held.
func (s *Store) dropBreached(key string, ss *session) {
	ss.gone = true
	ss.rt = nil
	s.mu.Lock()
	if s.sessions[key] == ss {
		delete(s.sessions, key)
	}
	s.resets[key] = reset{at: s.now()}
	s.mu.Unlock()
}

// CallFunc runs one tool for the REPL. A returned error becomes a JS
// exception; the result text is parsed as JSON when it is JSON.
type CallFunc func(ctx context.Context, name string, args json.RawMessage) (string, error)

// EvalRequest is one js_eval.
type EvalRequest struct {
	// Account is whose eval this is, for the fair share of slots.
	Account string
	// Session keys the state.
	Session string
	Code    string
	// Tools are the names callable as tools.<name>.
	Tools []string
	Call  CallFunc
}

// EvalResult is what the model sees.
type EvalResult struct {
	Output string
	// Error is set when the code threw or a budget was exceeded.
	Error string
	// Fresh is true when this eval started a new runtime.
	Fresh bool
	// Reset is true when the session's earlier state was dropped because
	// an eval went over the memory budget.
	Reset bool
	// Evicted is true when it was dropped because the replica's kept REPL
	// state was full (MaxStateBytes) and this session's was the least
	// recently used.
	Evicted   bool
	Truncated bool
	ToolCalls int
}

// maxCallStack bounds JavaScript call depth.
const maxCallStack = 2000

// awaitPattern detects code that needs an async wrapper.
var awaitPattern = regexp.MustCompile(`\bawait\b`)

type settled struct {
	resolve, reject func(any) error
	value           any
	err             error
}

// Eval runs code in the session's runtime.
func (s *Store) Eval(ctx context.Context, req *EvalRequest) EvalResult {
	res, breached := s.eval(ctx, req)
	if breached || s.evict(req.Session) {
		// The dropped runtime is unreachable once eval has returned; hand
		// its pages back to the OS rather than keep the process at its peak.
		debug.FreeOSMemory()
	}
	return res
}

func (s *Store) eval(ctx context.Context, req *EvalRequest) (EvalResult, bool) {
	var ss *session
	var res EvalResult
	for {
		var fresh bool
		var gone *reset
		var err error
		ss, fresh, gone, err = s.get(req.Session)
		res.Fresh = fresh
		if gone != nil {
			res.Reset, res.Evicted = !gone.evicted, gone.evicted
		}
		if err != nil {
			s.opts.Log.Error("starting a JavaScript runtime failed", "err", err)
			return EvalResult{Error: "internal error: the REPL could not start"}, false
		}
		ss.mu.Lock()
		if !ss.gone {
			break
		}
		// Dropped by a concurrent eval of the same session: start afresh.
		ss.mu.Unlock()
	}
	defer ss.mu.Unlock()
	rt := ss.rt
	m := newMeter(rt, s.ledger, s.opts.MaxMemory, ss.retained.Load())
	// A slot is held while JavaScript runs, and the meter charged meanwhile.
	acquire := func(ctx context.Context) error {
		if err := s.sched.acquire(ctx, req.Account); err != nil {
			return err
		}
		m.hold()
		return nil
	}
	release := func() {
		m.unhold()
		s.sched.release(req.Account)
	}
	if err := acquire(ctx); err != nil {
		res.Error = fmt.Sprintf("the eval did not start: %v", err)
		return res, false
	}
	// The time budget starts once the eval may run.
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	m.deadline, _ = ctx.Deadline()
	ss.cur = m
	stopWatch, watchDone := make(chan struct{}), make(chan struct{})
	go m.watch(ctx, stopWatch, watchDone)
	stop := context.AfterFunc(ctx, func() { rt.Interrupt("time budget exceeded") })
	defer func() {
		// The watcher may interrupt until it is gone; only then clear.
		close(stopWatch)
		<-watchDone
		stop()
		rt.ClearInterrupt()
		ss.cur = nil
	}()

	out := &capped{max: s.opts.MaxOutput}
	show := shower(rt)
	console := rt.NewObject()
	logf := func(call goja.FunctionCall) goja.Value {
		parts := make([]string, len(call.Arguments))
		for i, a := range call.Arguments {
			if a.ExportType() != nil && a.ExportType().Kind().String() == "string" {
				parts[i] = a.String()
			} else {
				parts[i] = show(a)
			}
			// Cut before joining: the output is capped anyway, and a join
			// would copy a large value outside the memory budget.
			if len(parts[i]) > s.opts.MaxOutput {
				parts[i] = parts[i][:s.opts.MaxOutput]
			}
		}
		out.write(strings.Join(parts, " ") + "\n")
		return goja.Undefined()
	}
	for _, name := range []string{"log", "info", "warn", "error", "debug"} {
		_ = console.Set(name, logf)
	}
	_ = rt.Set("console", console)

	done := make(chan settled, s.opts.MaxToolCalls+1)
	tools := rt.NewObject()
	for _, name := range req.Tools {
		_ = tools.Set(name, func(call goja.FunctionCall) goja.Value {
			p, resolve, reject := rt.NewPromise()
			if res.ToolCalls >= s.opts.MaxToolCalls {
				_ = reject(rt.NewGoError(fmt.Errorf("tool call budget of %d per eval exceeded", s.opts.MaxToolCalls)))
				return rt.ToValue(p)
			}
			res.ToolCalls++
			args := json.RawMessage("{}")
			if a := call.Argument(0); !goja.IsUndefined(a) && !goja.IsNull(a) {
				args = json.RawMessage(show(a))
			}
			go func() {
				text, err := req.Call(ctx, name, args)
				st := settled{resolve: resolve, reject: reject, err: err}
				if err == nil {
					var v any
					if json.Unmarshal([]byte(text), &v) == nil {
						st.value = v
					} else {
						st.value = text
					}
				}
				done <- st
			}()
			return rt.ToValue(p)
		})
	}
	_ = rt.Set("tools", tools)

	code := req.Code
	async := awaitPattern.MatchString(code)
	if async {
		code = "(async () => {\n" + code + "\n})()"
	}
	held := true
	v, err := rt.RunString(code)
	for err == nil && async && !m.breached.Load() {
		p, ok := v.Export().(*goja.Promise)
		if !ok || p.State() != goja.PromiseStatePending {
			break
		}
		// Waiting for a tool runs no JavaScript: let other evals run.
		release()
		held = false
		if m.breached.Load() {
			break
		}
		var st settled
		select {
		case st = <-done:
		case <-ctx.Done():
			err = &goja.InterruptedError{}
		}
		if err != nil {
			break
		}
		if err = acquire(ctx); err != nil {
			err = &goja.InterruptedError{}
			break
		}
		held = true
		if st.err != nil {
			err = st.reject(rt.NewGoError(st.err))
		} else {
			err = st.resolve(st.value)
		}
	}
	if err == nil && async && !m.breached.Load() {
		p := v.Export().(*goja.Promise)
		if p.State() == goja.PromiseStateRejected {
			err = errors.New(show(p.Result()))
			if o, ok := p.Result().(*goja.Object); ok {
				if msg := o.Get("message"); msg != nil {
					err = errors.New(safeString(o.Get("name")) + ": " + safeString(msg))
				}
			}
		} else {
			v = p.Result()
		}
	}
	var so *goja.StackOverflowError
	var ex *goja.Exception
	switch {
	case m.breached.Load():
	case err == nil:
		if v != nil && !goja.IsUndefined(v) {
			// Written in parts: a large result is cut, never copied whole.
			out.write("=> ")
			out.write(show(v))
			out.write("\n")
		}
	case errors.As(err, &so):
		res.Error = fmt.Sprintf("RangeError: maximum call stack size (%d) exceeded", maxCallStack)
	case isInterrupt(err) || ctx.Err() != nil:
		res.Error = fmt.Sprintf("interrupted: the eval exceeded its time budget of %s", s.opts.Timeout)
	case errors.As(err, &ex):
		res.Error = safeString(ex.Value())
	default:
		res.Error = err.Error()
	}
	if held {
		release()
	}
	res.Output, res.Truncated = out.String(), out.truncated
	if m.breached.Load() {
		res.Error = (&memoryError{limit: m.limit}).Error()
		s.opts.Log.Warn("a js_eval went over its memory budget; the session's REPL state was dropped", "limit_bytes", m.limit)
		s.dropBreached(req.Session, ss)
		return res, true
	}
	ss.retained.Store(max(m.peekBase(), 0))
	return res, false
}

func isInterrupt(err error) bool {
	var ie *goja.InterruptedError
	return errors.As(err, &ie)
}

// shower renders a value for output: objects as JSON (through the guarded
// JSON.stringify), the rest as strings.
func shower(rt *goja.Runtime) func(goja.Value) string {
	stringify, _ := goja.AssertFunction(rt.Get("JSON").ToObject(rt).Get("stringify"))
	return func(v goja.Value) string {
		if v == nil || goja.IsUndefined(v) {
			return "undefined"
		}
		if _, isObj := v.(*goja.Object); isObj {
			if s, err := stringify(goja.Undefined(), v); err == nil && !goja.IsUndefined(s) {
				return s.String()
			}
		}
		return safeString(v)
	}
}

// safeString converts v with its toString, which is JavaScript that may
// throw, meet a memory guard or be interrupted, possibly with no
// JavaScript frame to catch it. A swallowed interrupt is raised again by
// the watcher.
func safeString(v goja.Value) (s string) {
	defer func() {
		switch r := recover().(type) {
		case nil:
		case *goja.Exception, *goja.InterruptedError, *goja.StackOverflowError:
			s = "[a value whose toString failed]"
		default:
			panic(r)
		}
	}()
	return v.String()
}

// capped is an output buffer that keeps at most max bytes.
type capped struct {
	b         strings.Builder
	max       int
	truncated bool
}

func (c *capped) write(s string) {
	if room := c.max - c.b.Len(); len(s) > room {
		s = s[:max(room, 0)]
		c.truncated = true
	}
	c.b.WriteString(s)
}

func (c *capped) String() string {
	if c.truncated {
		return c.b.String() + fmt.Sprintf("\n[output truncated at %d bytes]", c.max)
	}
	return c.b.String()
}
