// Package jsrepl is the Deep agent's JavaScript REPL (js_eval) on goja.
// Each session keeps one runtime in memory for a while (state persists
// across evals), `await tools.<name>(args)` calls tools through a callback
// the agent supplies, console output is captured, and every eval has
// budgets for wall time, tool calls and output size. The runtime has no
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
	"strings"
	"sync"
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
	// TTL drops a session's state after it was unused this long.
	TTL time.Duration
	// Log is required.
	Log *slog.Logger
}

// Store holds the runtimes of the sessions this replica has seen.
type Store struct {
	opts     Options
	mu       sync.Mutex
	sessions map[string]*session
	now      func() time.Time
}

type session struct {
	mu   sync.Mutex
	rt   *goja.Runtime
	used time.Time
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
	return &Store{opts: opts, sessions: map[string]*session{}, now: time.Now}
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
// or expired; expired sessions of others are swept on the way.
func (s *Store) get(key string) (*session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k, ss := range s.sessions {
		if now.Sub(ss.used) > s.opts.TTL && ss.mu.TryLock() {
			delete(s.sessions, k)
			ss.mu.Unlock()
		}
	}
	if ss, ok := s.sessions[key]; ok {
		ss.used = now
		return ss, false
	}
	ss := &session{rt: goja.New(), used: now}
	ss.rt.SetFieldNameMapper(goja.UncapFieldNameMapper())
	// Deep recursion through native callbacks would grow the Go stack;
	// a JS RangeError is the budget instead.
	ss.rt.SetMaxCallStackSize(maxCallStack)
	s.sessions[key] = ss
	return ss, true
}

// CallFunc runs one tool for the REPL. A returned error becomes a JS
// exception; the result text is parsed as JSON when it is JSON.
type CallFunc func(ctx context.Context, name string, args json.RawMessage) (string, error)

// EvalRequest is one js_eval.
type EvalRequest struct {
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
	Fresh     bool
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
	ss, fresh := s.get(req.Session)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	rt := ss.rt
	res := EvalResult{Fresh: fresh}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()

	out := &capped{max: s.opts.MaxOutput}
	stringify, _ := goja.AssertFunction(rt.Get("JSON").ToObject(rt).Get("stringify"))
	show := func(v goja.Value) string {
		if v == nil || goja.IsUndefined(v) {
			return "undefined"
		}
		if _, isObj := v.(*goja.Object); isObj {
			if s, err := stringify(goja.Undefined(), v); err == nil && !goja.IsUndefined(s) {
				return s.String()
			}
		}
		return v.String()
	}
	console := rt.NewObject()
	logf := func(call goja.FunctionCall) goja.Value {
		parts := make([]string, len(call.Arguments))
		for i, a := range call.Arguments {
			if a.ExportType() != nil && a.ExportType().Kind().String() == "string" {
				parts[i] = a.String()
			} else {
				parts[i] = show(a)
			}
		}
		out.write(strings.Join(parts, " ") + "\n")
		return goja.Undefined()
	}
	for _, m := range []string{"log", "info", "warn", "error", "debug"} {
		_ = console.Set(m, logf)
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

	stop := context.AfterFunc(ctx, func() { rt.Interrupt("time budget exceeded") })
	defer func() {
		stop()
		rt.ClearInterrupt()
	}()

	code := req.Code
	async := awaitPattern.MatchString(code)
	if async {
		code = "(async () => {\n" + code + "\n})()"
	}
	v, err := rt.RunString(code)
	for err == nil && async {
		p, ok := v.Export().(*goja.Promise)
		if !ok || p.State() != goja.PromiseStatePending {
			break
		}
		select {
		case st := <-done:
			if st.err != nil {
				err = st.reject(rt.NewGoError(st.err))
			} else {
				err = st.resolve(st.value)
			}
		case <-ctx.Done():
			err = &goja.InterruptedError{}
		}
	}
	if err == nil && async {
		p := v.Export().(*goja.Promise)
		if p.State() == goja.PromiseStateRejected {
			err = errors.New(show(p.Result()))
			if o, ok := p.Result().(*goja.Object); ok {
				if m := o.Get("message"); m != nil {
					err = errors.New(o.Get("name").String() + ": " + m.String())
				}
			}
		} else {
			v = p.Result()
		}
	}
	if err != nil {
		var ie *goja.InterruptedError
		var so *goja.StackOverflowError
		var ex *goja.Exception
		switch {
		case errors.As(err, &so):
			res.Error = fmt.Sprintf("RangeError: maximum call stack size (%d) exceeded", maxCallStack)
		case errors.As(err, &ie) || ctx.Err() != nil:
			res.Error = fmt.Sprintf("interrupted: the eval exceeded its time budget of %s", s.opts.Timeout)
		case errors.As(err, &ex):
			res.Error = ex.Value().String()
		default:
			res.Error = err.Error()
		}
	} else if v != nil && !goja.IsUndefined(v) {
		out.write("=> " + show(v) + "\n")
	}
	res.Output, res.Truncated = out.String(), out.truncated
	return res
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
