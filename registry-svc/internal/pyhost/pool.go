// Package pyhost runs the Python tool host: a stdlib-only script (host.py,
// embedded) started as a pool of processes that discover tools in folders
// (registry-svc/design.md "Tool discovery", "Input schema") and run calls
// ("Calling"). Requests and replies are JSON lines on a dedicated pipe pair (fd
// 3 and 4), so a tool's print() and logging end up in the log, never in the
// protocol.
package pyhost

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mirobody/mirobody-go/registry-svc/internal/sandbox"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/wire"
)

// ErrClosed is returned by Call on a pool that is closing; the call was not
// sent to any host, so it is safe to send it elsewhere.
var ErrClosed = wire.Errorf(wire.Unavailable, "the Python tool host is shutting down")

//go:embed host.py
var hostSource string

//go:embed mirobody.py
var helperSource string

// script is what the interpreter runs: extras.py and host.py after a line binding
// MIROBODY_SOURCE to the helper module's text. strconv.Quote's escapes are
// all valid in a Python str literal, and it leaves printable UTF-8 as is.
var script = []byte("MIROBODY_SOURCE = " + strconv.Quote(helperSource) + "\n" + extrasSource + "\n" + hostSource)

// ProgressFunc receives a running tool's mirobody.progress reports.
type ProgressFunc func(progress, total float64, message string)

// LogFunc receives a running tool's log records (mirobody.log and Python
// logging) at or above CallOptions.LogLevel.
type LogFunc func(*registry.LogRecord)

// CallOptions are the parts of a call beyond the tool and its arguments.
type CallOptions struct {
	// UserInfo is passed as the tool's user_info (nil unless it takes it).
	UserInfo any
	// Progress, when set, receives the tool's mirobody.progress reports,
	// all before the call returns; when nil they are dropped in the host.
	Progress ProgressFunc
	// Log receives the tool's log records at or above LogLevel (an MCP
	// level); with LogLevel "" none are sent.
	Log      LogFunc
	LogLevel string
	// Capabilities and Inputs are registry.CallRequest's
	// ClientCapabilities and InputResponses: what the tool may ask the
	// caller, and the answers so far.
	Capabilities []string
	Inputs       map[string]json.RawMessage
	// Replay is registry.CallRequest's Replay.
	Replay []string
}

// MinPython is the oldest supported Python version.
var MinPython = [2]int{3, 9}

// ToolInfo is one discovered Python tool.
type ToolInfo struct {
	// Name is the function or method name.
	Name string `json:"name"`
	// Description is the docstring's first paragraph plus its Returns: text.
	Description string `json:"description"`
	// InputSchema is generated from the type hints (registry-svc/design.md
	// "Input schema") or taken from the function's input_schema attribute (or
	// inputSchema, upstream Mirobody's spelling).
	InputSchema json.RawMessage `json:"inputSchema"`
	// Annotations is the function's annotations attribute, if any.
	Annotations json.RawMessage `json:"annotations,omitempty"`
	// Meta is the function's meta attribute (upstream Mirobody's), sent
	// to MCP clients as the tool's _meta.
	Meta json.RawMessage `json:"_meta,omitempty"`
	// Execution is {"taskSupport": "optional"|"required"} when the
	// function's task_support attribute says it may run as an MCP task
	// (gateway/design.md "Tasks").
	Execution json.RawMessage `json:"execution,omitempty"`
	// TaskAfterInput is the function's task_after_input attribute: the
	// task tool's first round runs inline and the call that answers its
	// questions becomes the task (gateway/design.md "Tasks").
	TaskAfterInput bool `json:"task_after_input,omitempty"`
	// RequiresData is the function's requires_data attribute
	// (registry-svc/design.md "Data gating").
	RequiresData string `json:"requires_data,omitempty"`
	// TakesUserInfo is true when the function has a user_info parameter.
	TakesUserInfo bool `json:"takes_user_info"`
	// IsAsync is true for coroutine functions.
	IsAsync bool `json:"is_async"`
	// Source is "<file>:<line>" of the function.
	Source string `json:"source"`
}

// Discovery is what a host found in the tool folders.
type Discovery struct {
	// Tools are the registered tools, first-wins applied across and within
	// the folders.
	Tools []ToolInfo
	// Failed are the files that could not be imported (already logged).
	Failed []string
	// Resources and Prompts are the modules' RESOURCES and PROMPTS
	// (extras.go).
	Resources []ResourceInfo
	Prompts   []registry.Prompt
}

// Options configures a Pool.
type Options struct {
	// Python is the interpreter; see Interpreter.
	Python string
	// Workers is the number of host processes; at least 1.
	Workers int
	// Dirs are the tool folders, in priority order.
	Dirs []string
	// Env is the whole environment of each host process, as KEY=value
	// (conf.Config.ToolEnviron). Nothing of registry-svc's own environment
	// is inherited, so its secrets never reach a tool; nil means an empty
	// environment.
	Env []string
	// Log receives host output, discovery problems and restarts. Required.
	Log *slog.Logger
	// Heartbeat is the interval of liveness pings; zero means 2 s.
	Heartbeat time.Duration
	// HangTimeout is how long a host may leave pings unanswered before it is
	// considered hung and replaced; zero means 10 s.
	HangTimeout time.Duration
	// StartTimeout bounds spawning plus discovery of one host; zero means 60 s.
	StartTimeout time.Duration
	// AbandonedLimit is how many timed-out sync calls may keep running in
	// their (uninterruptible) threads before the host is drained and
	// replaced; zero means 16.
	AbandonedLimit int
	// OnRestart, when set, runs each time a host is replaced (for metrics
	// that outlive one pool across reloads).
	OnRestart func()
	// Sandbox, when set, confines every host process (TOOL_SANDBOX); nil
	// runs them unconfined.
	Sandbox *sandbox.Sandbox
	// Tracer records each call's run in the host as a span (trace.go);
	// nil records none.
	Tracer trace.Tracer
	// VersionChecked skips CheckVersion: a reload's interpreter is the one
	// the first Start checked, and the check is a whole Python start-up
	// (seconds on a loaded machine) before a reload's list_changed.
	VersionChecked bool
}

// Pool is a set of host processes serving calls concurrently. Every process
// imports every tool module; a call goes to the least busy ready process.
type Pool struct {
	opts     Options
	log      *slog.Logger
	slots    []*slot
	mu       sync.Mutex
	ready    chan struct{} // closed and replaced whenever a slot becomes ready
	closing  atomic.Bool
	stopped  chan struct{}
	wg       sync.WaitGroup
	restarts atomic.Int64
	calls    int           // calls in flight, under mu
	idle     chan struct{} // closed when calls drops to zero while closing
}

type slot struct {
	idx int
	cur atomic.Pointer[worker]
}

// Interpreter returns the interpreter to run (registry-svc/design.md "Calling"): configured when
// set, else /usr/bin/python3 when it exists, else python3 on PATH.
func Interpreter(configured string) string {
	if configured != "" {
		return configured
	}
	if st, err := os.Stat("/usr/bin/python3"); err == nil && !st.IsDir() {
		return "/usr/bin/python3"
	}
	return "python3"
}

// CheckVersion runs python and fails with a clear message unless it is a
// Python of at least MinPython.
func CheckVersion(ctx context.Context, python string) error {
	out, err := exec.CommandContext(ctx, python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])").Output()
	if err != nil {
		return fmt.Errorf("running the Python interpreter %q (set PYTHON): %w", python, err)
	}
	v := strings.TrimSpace(string(out))
	major, minor, ok := strings.Cut(v, ".")
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(minor)
	if !ok || err1 != nil || err2 != nil {
		return fmt.Errorf("python interpreter %q reported version %q; the tool host needs Python %d.%d or newer", python, v, MinPython[0], MinPython[1])
	}
	if ma < MinPython[0] || (ma == MinPython[0] && mi < MinPython[1]) {
		return fmt.Errorf("python interpreter %q is Python %s; the tool host needs Python %d.%d or newer (set PYTHON)", python, v, MinPython[0], MinPython[1])
	}
	return nil
}

// Start checks the interpreter, starts opts.Workers hosts, discovers the
// tools in opts.Dirs and returns them. Modules that fail to import are
// logged and skipped; an error means no host could start.
func Start(ctx context.Context, opts Options) (*Pool, *Discovery, error) {
	if opts.Workers < 1 {
		opts.Workers = 1
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 2 * time.Second
	}
	if opts.HangTimeout <= 0 {
		opts.HangTimeout = 10 * time.Second
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 60 * time.Second
	}
	if opts.AbandonedLimit <= 0 {
		opts.AbandonedLimit = 16
	}
	opts.Python = Interpreter(opts.Python)
	if !opts.VersionChecked {
		if err := CheckVersion(ctx, opts.Python); err != nil {
			return nil, nil, err
		}
	}
	p := &Pool{opts: opts, log: opts.Log.With("component", "pyhost"), ready: make(chan struct{}), stopped: make(chan struct{})}
	type first struct {
		found *Discovery
		err   error
	}
	results := make([]first, opts.Workers)
	var wg sync.WaitGroup
	for i := range opts.Workers {
		s := &slot{idx: i}
		p.slots = append(p.slots, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, found, err := p.launch(ctx, s, i == 0)
			results[i] = first{found, err}
			if err == nil {
				p.wg.Add(1)
				go p.supervise(s, w)
			}
		}()
	}
	wg.Wait()
	var errs []error
	for _, r := range results {
		errs = append(errs, r.err)
	}
	if err := errors.Join(errs...); err != nil {
		p.Close(context.Background())
		return nil, nil, err
	}
	return p, results[0].found, nil
}

// launch spawns a host for s and runs discovery in it; report logs the
// discovery problems (once per pool, not once per worker).
func (p *Pool) launch(ctx context.Context, s *slot, report bool) (*worker, *Discovery, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.StartTimeout)
	defer cancel()
	w, err := spawn(ctx, p.opts.Python, p.opts.Env, p.opts.Sandbox, script, p.log.With("worker", s.idx))
	if err != nil {
		return nil, nil, err
	}
	r, err := w.request(ctx, &message{Op: "discover", Dirs: p.opts.Dirs}, false, callHooks{})
	if err == nil && r.Error != "" {
		err = errors.New(r.Error)
	}
	if err != nil {
		w.kill()
		return nil, nil, fmt.Errorf("discovering Python tools: %w", err)
	}
	if report {
		for _, l := range r.Logs {
			p.logHost(l)
		}
	}
	w.idx = s.idx
	s.cur.Store(w)
	p.signalReady()
	return w, &Discovery{Tools: r.Tools, Failed: r.Failed, Resources: r.Resources, Prompts: r.Prompts}, nil
}

func (p *Pool) logHost(l hostLog) {
	level := slog.LevelInfo
	switch l.Level {
	case "warning":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	attrs := make([]any, 0, 2*len(l.Attrs))
	for k, v := range l.Attrs {
		attrs = append(attrs, k, v)
	}
	p.log.Log(context.Background(), level, l.Msg, attrs...)
}

func (p *Pool) signalReady() {
	p.mu.Lock()
	close(p.ready)
	p.ready = make(chan struct{})
	p.mu.Unlock()
}

// supervise watches w (heartbeats, exit) and replaces it with backoff until
// the pool closes.
func (p *Pool) supervise(s *slot, w *worker) {
	defer p.wg.Done()
	backoff := 100 * time.Millisecond
	for {
		started := time.Now()
		p.watch(s, w)
		s.cur.CompareAndSwap(w, nil)
		if p.closing.Load() {
			return
		}
		p.restarts.Add(1)
		if p.opts.OnRestart != nil {
			p.opts.OnRestart()
		}
		if time.Since(started) > time.Minute {
			backoff = 100 * time.Millisecond
		}
		for {
			p.log.Warn("python tool host stopped; replacing it", "worker", s.idx, "err", w.err, "backoff_ms", backoff.Milliseconds())
			select {
			case <-time.After(backoff):
			case <-p.stopped:
				return
			}
			backoff = min(backoff*2, 10*time.Second)
			nw, _, err := p.launch(context.Background(), s, false)
			if p.closing.Load() {
				if nw != nil {
					nw.stop(time.Second)
				}
				return
			}
			if err == nil {
				w = nw
				p.log.Info("python tool host replaced", "worker", s.idx)
				break
			}
			w = &worker{err: err}
		}
	}
}

// watch returns when w has exited, killing it first when it stops
// answering heartbeats (a blocked event loop).
func (p *Pool) watch(s *slot, w *worker) {
	t := time.NewTicker(p.opts.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-p.stopped:
			<-w.done
			return
		case <-t.C:
			if time.Since(time.Unix(0, w.pong.Load())) > p.opts.HangTimeout {
				p.log.Error("python tool host is hung; killing it", "pid", w.cmd.Process.Pid)
				s.cur.CompareAndSwap(w, nil)
				w.kill()
				continue
			}
			go p.ping(s, w)
		}
	}
}

// ping checks w's liveness and retires it when too many of its threads are
// stuck in abandoned calls: it takes no new calls, and it is stopped once its
// calls in flight end (or the hang timeout passes), so that the supervisor
// replaces it.
func (p *Pool) ping(s *slot, w *worker) {
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.HangTimeout)
	defer cancel()
	r, err := w.request(ctx, &message{Op: "ping"}, false, callHooks{})
	if err != nil || r.Abandoned < p.opts.AbandonedLimit || !s.cur.CompareAndSwap(w, nil) {
		return
	}
	p.log.Warn("python tool host has too many stuck tool threads; replacing it", "pid", w.cmd.Process.Pid, "abandoned", r.Abandoned)
	drain := time.NewTicker(50 * time.Millisecond)
	defer drain.Stop()
	for w.busy.Load() > 0 {
		select {
		case <-drain.C:
		case <-ctx.Done():
			w.kill()
			return
		}
	}
	w.kill()
}

// Restarts returns how many times a host process was replaced.
func (p *Pool) Restarts() int64 { return p.restarts.Load() }

// pick returns the least busy ready worker, waiting for one until ctx ends.
func (p *Pool) pick(ctx context.Context) (*worker, error) {
	for {
		if p.closing.Load() {
			return nil, ErrClosed
		}
		p.mu.Lock()
		ready := p.ready
		p.mu.Unlock()
		var best *worker
		for _, s := range p.slots {
			if w := s.cur.Load(); w != nil && w.alive() && (best == nil || w.busy.Load() < best.busy.Load()) {
				best = w
			}
		}
		if best != nil {
			return best, nil
		}
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, wire.Errorf(wire.Unavailable, "no Python tool host is ready")
		}
	}
}

// Call runs tool name with args (a validated JSON object) and userInfo (nil
// unless the tool takes it). progress, when set, receives the tool's
// mirobody.progress reports, all before Call returns; when nil the tool's
// reports are dropped in the host. A tool's own failure is a result with
// IsError. Errors: unavailable when the host died during the call or none
// is ready; ctx's error when ctx ended first (the host is asked to cancel
// the call).
func (p *Pool) Call(ctx context.Context, name string, args json.RawMessage, userInfo any, progress ProgressFunc) (*registry.CallResponse, error) {
	return p.CallWith(ctx, name, args, &CallOptions{UserInfo: userInfo, Progress: progress})
}

// acquire takes the least busy host for one request; release gives it
// back. It fails when the pool is closed or ctx ends first.
func (p *Pool) acquire(ctx context.Context) (w *worker, release func(), err error) {
	if !p.enter() {
		return nil, nil, ErrClosed
	}
	if w, err = p.pick(ctx); err != nil {
		p.leave()
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, err
	}
	w.busy.Add(1)
	return w, func() { w.busy.Add(-1); p.leave() }, nil
}

// CallWith is Call with every option: besides progress, the tool's log
// records and its questions to the caller (registry-svc/design.md
// "Logging", "Elicitation and sampling"). A tool waiting for answers
// returns a result with InputRequests.
func (p *Pool) CallWith(ctx context.Context, name string, args json.RawMessage, o *CallOptions) (*registry.CallResponse, error) {
	// Python reads the protocol as UTF-8: other bytes could never be
	// decoded into the tool's arguments.
	args, err := registry.Arguments(name, args)
	if err != nil {
		return nil, err
	}
	w, release, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	hooks := callHooks{progress: o.Progress}
	m := &message{Op: "call", Name: name, Args: args, User: o.UserInfo, Caps: o.Capabilities, Inputs: o.Inputs, Replay: o.Replay}
	if o.Log != nil && o.LogLevel != "" {
		hooks.log, m.LogLevel = o.Log, o.LogLevel
	}
	// Only a recorded call is traced in the host: without an exporter the
	// host keeps no timing and the tool sees no traceparent.
	traced := p.opts.Tracer != nil && trace.SpanFromContext(ctx).IsRecording()
	if traced {
		m.Traceparent = traceparent(ctx)
	}
	sent := time.Now()
	r, err := w.request(ctx, m, true, hooks)
	if traced {
		p.record(ctx, w, name, sent, r, err)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case r.Invalid:
		return nil, wire.Errorf(wire.InvalidArgument, "python tool host: %s", r.Error)
	case r.Error != "":
		return nil, wire.Errorf(wire.NotFound, "python tool host: %s", r.Error)
	case r.Result == nil:
		return nil, wire.Errorf(wire.Unavailable, "python tool host cancelled the call")
	}
	if r.Traceback != "" {
		w.log.Warn("python tool raised", "tool", name, "traceback", r.Traceback)
	}
	if r.Result.Content == nil {
		r.Result.Content = []json.RawMessage{}
	}
	return r.Result, nil
}

// Close stops taking calls, waits for the calls in flight until ctx ends,
// then stops every host process (killing those that do not exit).
func (p *Pool) Close(ctx context.Context) {
	p.mu.Lock()
	if p.closing.Swap(true) {
		p.mu.Unlock()
		return
	}
	idle := make(chan struct{})
	if p.calls == 0 {
		close(idle)
	}
	p.idle = idle
	p.mu.Unlock()
	select {
	case <-idle:
	case <-ctx.Done():
	}
	close(p.stopped)
	for _, s := range p.slots {
		if w := s.cur.Swap(nil); w != nil {
			w.stop(2 * time.Second)
		}
	}
	p.wg.Wait()
}

func (p *Pool) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing.Load() {
		return false
	}
	p.calls++
	return true
}

func (p *Pool) leave() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls--
	if p.calls == 0 && p.idle != nil {
		close(p.idle)
		p.idle = nil
	}
}
