package pyhost

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mirobody/mirobody-go/registry-svc/internal/sandbox"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/wire"
)

// message is one JSON line in either direction.
type message struct {
	ID   int64           `json:"id,omitempty"`
	Op   string          `json:"op,omitempty"`
	Dirs []string        `json:"dirs,omitempty"`
	Name string          `json:"name,omitempty"`
	Args json.RawMessage `json:"args,omitempty"`
	User any             `json:"user_info,omitempty"`
	// WantProgress asks the host to relay the tool's mirobody.progress calls.
	WantProgress bool `json:"want_progress,omitempty"`
	// LogLevel, Caps, Inputs and Replay are CallOptions' LogLevel,
	// Capabilities, Inputs and Replay.
	LogLevel string                     `json:"log_level,omitempty"`
	Caps     []string                   `json:"caps,omitempty"`
	Inputs   map[string]json.RawMessage `json:"inputs,omitempty"`
	Replay   []string                   `json:"replay,omitempty"`
	Python   string                     `json:"python,omitempty"`
	PID      int                        `json:"pid,omitempty"`
	// Traceparent is the W3C trace context of the registry's call span.
	Traceparent string `json:"traceparent,omitempty"`
	// Timing is the host's own timing of a call (trace.go).
	Timing *hostTiming `json:"timing,omitempty"`

	// URI, Arguments, Argument and Value are the requests of extras.go.
	URI       string            `json:"uri,omitempty"`
	Arguments map[string]string `json:"arguments,omitempty"`
	Argument  string            `json:"argument,omitempty"`
	Value     string            `json:"value,omitempty"`
	extraReply

	Tools     []ToolInfo             `json:"tools,omitempty"`
	Logs      []hostLog              `json:"logs,omitempty"`
	Failed    []string               `json:"failed,omitempty"`
	Result    *registry.CallResponse `json:"result,omitempty"`
	Error     string                 `json:"error,omitempty"`
	Traceback string                 `json:"traceback,omitempty"`
	Cancelled bool                   `json:"cancelled,omitempty"`
	// Invalid says the host could not read the request (Error says why).
	Invalid   bool `json:"invalid,omitempty"`
	Pong      bool `json:"pong,omitempty"`
	Abandoned int  `json:"abandoned,omitempty"`
	// Progress, Total and Message come with op "progress" for call ID.
	Progress float64 `json:"progress,omitempty"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
	// Level, Logger and Data come with op "log" for call ID.
	Level  string          `json:"level,omitempty"`
	Logger string          `json:"logger,omitempty"`
	Data   json.RawMessage `json:"data,omitempty"`
	died   error
}

// hostLog is a log line the host reports with a reply (discovery problems).
type hostLog struct {
	Level string         `json:"level"`
	Msg   string         `json:"msg"`
	Attrs map[string]any `json:"attrs"`
}

// ErrHostStopped is what calls in flight get when their host goes away; the
// tool may have run, so only an idempotent call may be sent again.
var ErrHostStopped = wire.Errorf(wire.Unavailable, "the Python tool host stopped during the call")

// worker is one running host process.
type worker struct {
	log     *slog.Logger
	cmd     *exec.Cmd
	in      *os.File // our end of the host's fd 3
	out     *os.File // our end of the host's fd 4
	wmu     sync.Mutex
	mu      sync.Mutex
	pending map[int64]chan *message
	// hooks holds the progress and log reporters of calls in flight that
	// asked for them.
	hooks  map[int64]callHooks
	err    error // set once the worker is dead
	nextID atomic.Int64
	busy   atomic.Int64
	pong   atomic.Int64 // unix nanos of the last heartbeat reply
	done   chan struct{}
	hello  chan *message
	output sync.WaitGroup
	tmp    string // the sandboxed host's private temp dir, removed at exit
	idx    int    // the slot's index: the worker id in logs and spans
}

// hostCommand returns the interpreter command of one host: confined in sb,
// with a private temp dir, or (sb nil) plain with an empty temp dir path.
func hostCommand(python string, env []string, sb *sandbox.Sandbox) (*exec.Cmd, string, error) {
	// -u: unbuffered print() lines reach the log at once; -B: no __pycache__
	// in tool folders (it would wake the hot-reload watch). The script comes
	// on stdin ("-"), which Python reads to the end before running it, so a
	// tool reading stdin sees end of file.
	args := []string{"-u", "-B", "-", "mirobody-tool-host"}
	if sb == nil {
		cmd := exec.Command(python, args...)
		// A nil Env would inherit ours; a non-nil one, even empty, replaces it.
		cmd.Env = append(make([]string, 0, len(env)), env...)
		return cmd, "", nil
	}
	tmp, err := os.MkdirTemp("", "mirobody-tool-*")
	if err != nil {
		return nil, "", fmt.Errorf("creating the tool host's temp dir: %w", err)
	}
	cmd, err := sb.Command(tmp, env, args...)
	if err != nil {
		removeTemp(tmp)
		return nil, "", err
	}
	return cmd, tmp, nil
}

// removeTemp removes a host's temp dir, with whatever its tools left there.
func removeTemp(tmp string) {
	if tmp != "" {
		_ = os.RemoveAll(tmp)
	}
}

// spawn starts one host process, confined in sb unless sb is nil, and
// waits for its hello.
func spawn(ctx context.Context, python string, env []string, sb *sandbox.Sandbox, script []byte, log *slog.Logger) (*worker, error) {
	cmd, tmp, err := hostCommand(python, env, sb)
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		removeTemp(tmp)
		return nil, fmt.Errorf("creating the request pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		removeTemp(tmp)
		return nil, fmt.Errorf("creating the reply pipe: %w", err)
	}
	cmd.Stdin = bytes.NewReader(script)
	cmd.ExtraFiles = []*os.File{inR, outW}
	isolate(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("piping host stdout: %w", err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("piping host stderr: %w", err)
	}
	if err := cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		removeTemp(tmp)
		return nil, fmt.Errorf("starting Python tool host %s: %w", python, err)
	}
	inR.Close()
	outW.Close()
	w := &worker{
		log: log.With("pid", cmd.Process.Pid), cmd: cmd, in: inW, out: outR, tmp: tmp,
		pending: map[int64]chan *message{}, hooks: map[int64]callHooks{}, done: make(chan struct{}), hello: make(chan *message, 1),
	}
	w.pong.Store(time.Now().UnixNano())
	w.output.Add(2)
	go w.copyOutput(stdout, "stdout")
	go w.copyOutput(stderr, "stderr")
	go w.readLoop()
	select {
	case h := <-w.hello:
		w.log.Debug("python tool host started", "python", h.Python)
		return w, nil
	case <-w.done:
		return nil, fmt.Errorf("python tool host exited at start: %w", w.err)
	case <-ctx.Done():
		w.kill()
		return nil, fmt.Errorf("waiting for the Python tool host: %w", ctx.Err())
	}
}

// copyOutput turns the host's stdout/stderr (tools' print() and logging)
// into log lines, within the caps of output.go. The pipe is always
// drained, in pieces of the buffer's size, so a chatty tool never blocks
// on print().
func (w *worker) copyOutput(r io.Reader, stream string) {
	defer w.output.Done()
	out := newOutputLog(w.log, stream)
	defer out.close()
	br := bufio.NewReaderSize(r, 64*1024)
	for {
		piece, err := br.ReadSlice('\n')
		full := errors.Is(err, bufio.ErrBufferFull)
		out.write(piece, !full && err == nil)
		if err != nil && !full {
			return
		}
	}
}

func (w *worker) readLoop() {
	sc := bufio.NewScanner(w.out)
	sc.Buffer(make([]byte, 256*1024), 64<<20)
	for sc.Scan() {
		var m message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			w.log.Error("tool host sent a bad protocol line", "err", err)
			continue
		}
		if m.Op == "hello" {
			w.hello <- &m
			continue
		}
		if m.Op == "progress" || m.Op == "log" {
			// Reported here, in protocol order, so that every progress
			// and log line reaches the caller before the call's result.
			w.mu.Lock()
			h := w.hooks[m.ID]
			w.mu.Unlock()
			switch {
			case m.Op == "progress" && h.progress != nil:
				h.progress(m.Progress, m.Total, m.Message)
			case m.Op == "log" && h.log != nil:
				h.log(&registry.LogRecord{Level: m.Level, Logger: m.Logger, Data: m.Data})
			}
			continue
		}
		if m.Pong {
			w.pong.Store(time.Now().UnixNano())
		}
		w.mu.Lock()
		ch := w.pending[m.ID]
		delete(w.pending, m.ID)
		delete(w.hooks, m.ID)
		w.mu.Unlock()
		if ch != nil {
			ch <- &m
		}
	}
	if err := sc.Err(); err != nil {
		// The protocol stream is unusable (for example a reply over the
		// size limit): replace the host rather than wait on it.
		w.log.Error("reading the tool host protocol failed; killing it", "err", err)
		w.kill()
		_, _ = io.Copy(io.Discard, w.out)
	}
	w.output.Wait()
	err := w.cmd.Wait()
	if err == nil {
		err = errors.New("exited")
	}
	removeTemp(w.tmp)
	w.out.Close()
	w.mu.Lock()
	w.err = err
	pending := w.pending
	w.pending = map[int64]chan *message{}
	clear(w.hooks)
	w.mu.Unlock()
	// done closes first, so that a caller woken below never picks this
	// worker again.
	close(w.done)
	for id, ch := range pending {
		ch <- &message{ID: id, died: ErrHostStopped}
	}
}

// callHooks receive a call's progress and log lines; either may be nil.
type callHooks struct {
	progress ProgressFunc
	log      LogFunc
}

// request sends m with a fresh id and waits for its reply or ctx. When ctx
// ends first, cancel (if set) is sent to the host. hooks receive the call's
// progress and log lines until request returns.
func (w *worker) request(ctx context.Context, m *message, cancel bool, hooks callHooks) (*message, error) {
	m.ID = w.nextID.Add(1)
	ch := make(chan *message, 1)
	w.mu.Lock()
	if w.err != nil {
		w.mu.Unlock()
		return nil, ErrHostStopped
	}
	w.pending[m.ID] = ch
	if hooks.progress != nil {
		m.WantProgress = true
	}
	if hooks.progress != nil || hooks.log != nil {
		w.hooks[m.ID] = hooks
	}
	w.mu.Unlock()
	if err := w.send(m); err != nil {
		w.forget(m.ID)
		return nil, ErrHostStopped
	}
	select {
	case r := <-ch:
		if r.died != nil {
			return nil, r.died
		}
		return r, nil
	case <-ctx.Done():
		w.forget(m.ID)
		if cancel {
			_ = w.send(&message{ID: m.ID, Op: "cancel"})
		}
		return nil, ctx.Err()
	}
}

func (w *worker) forget(id int64) {
	w.mu.Lock()
	delete(w.pending, id)
	delete(w.hooks, id)
	w.mu.Unlock()
}

func (w *worker) send(m *message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding host request: %w", err)
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	_, err = w.in.Write(append(b, '\n'))
	return err
}

// stop closes the request pipe, which makes the host exit, and kills it if
// it has not exited within grace.
func (w *worker) stop(grace time.Duration) {
	w.wmu.Lock()
	w.in.Close()
	w.wmu.Unlock()
	select {
	case <-w.done:
	case <-time.After(grace):
		w.kill()
		<-w.done
	}
}

// kill ends the host and its subprocesses at once.
func (w *worker) kill() { killGroup(w.cmd) }

// alive reports whether the host process has not exited yet.
func (w *worker) alive() bool {
	select {
	case <-w.done:
		return false
	default:
		return true
	}
}
