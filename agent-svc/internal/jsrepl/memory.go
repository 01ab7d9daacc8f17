package jsrepl

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"
)

// goja has no allocation limit, so the memory budget is kept from outside
// (design.md, "js_eval on goja"): one eval at a time runs JavaScript on a
// Store (the gate), so heap growth while it runs is its own; a watcher
// samples the heap and interrupts the runtime over budget; the builtins
// that allocate in one native call are guarded by guards.js.

//go:embed guards.js
var guardsSource string

// heapMetric is the heap bytes in objects, live or not yet swept: cheap to
// read (no stop-the-world) and current to the span.
const heapMetric = "/memory/classes/heap/objects:bytes"

// pollInterval is how often the watcher samples the heap while JavaScript
// runs; goja allocates well under 1 GB/s, so a sample misses little.
const pollInterval = 2 * time.Millisecond

func heapBytes() int64 {
	s := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// memoryError ends an eval over budget; it is the interrupt value.
type memoryError struct{ limit int64 }

func (e *memoryError) Error() string {
	return fmt.Sprintf("the eval exceeded the REPL memory budget of %s (JS_MAX_MEMORY_BYTES); it was stopped and this session's REPL state was reset", mib(e.limit))
}

func mib(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }

// meter accounts one eval's heap growth, plus what the session's state
// held before it, against the budget. Its counters are shared with the
// watcher goroutine.
type meter struct {
	rt    *goja.Runtime
	gate  chan struct{}
	limit int64
	// slack is the growth below which a hold's raw heap delta, garbage
	// included, is taken as is rather than confirmed by a collection.
	slack int64
	// base is the session's state before this eval plus the growth of
	// the eval's finished holds of the gate.
	base atomic.Int64
	// start is the heap when the current hold began; 0 between holds.
	start atomic.Int64
	// quiet is the usage below which the watcher does not collect again
	// after a collection showed the session within budget.
	quiet    atomic.Int64
	breached atomic.Bool
}

func newMeter(rt *goja.Runtime, gate chan struct{}, limit, retained int64) *meter {
	m := &meter{rt: rt, gate: gate, limit: limit, slack: max(limit/64, 1<<20)}
	m.base.Store(retained)
	return m
}

// acquire takes the gate, so that this eval alone runs JavaScript.
func (m *meter) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err // select would pick at random between a free gate and a done ctx
	}
	select {
	case m.gate <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	m.start.Store(heapBytes())
	return nil
}

// release ends a hold of the gate and books its growth. A large delta is
// measured after a collection, so that the eval's garbage is not booked as
// state.
func (m *meter) release() {
	start := m.start.Load()
	d := heapBytes() - start
	if d > m.slack {
		runtime.GC()
		d = heapBytes() - start
	}
	// start goes first: the watcher then undercounts for a moment rather
	// than counting the hold twice.
	m.start.Store(0)
	m.base.Add(d)
	<-m.gate
	if m.base.Load() > m.limit {
		m.breach()
	}
}

// used is the session's estimated heap now.
func (m *meter) used() int64 {
	u := m.base.Load()
	if start := m.start.Load(); start != 0 {
		u += heapBytes() - start
	}
	return u
}

// over reports whether need more bytes exceed the budget; before saying
// yes it collects, so that garbage is not held against the session.
func (m *meter) over(need int64) bool {
	if need > m.limit {
		return true
	}
	if u := m.used() + need; u <= m.limit || (need == 0 && u <= m.quiet.Load()) {
		return false
	}
	runtime.GC()
	u := m.used()
	m.quiet.Store(u + m.slack)
	return u+need > m.limit
}

// breach marks the eval over budget and interrupts the runtime.
func (m *meter) breach() {
	m.breached.Store(true)
	m.rt.Interrupt(&memoryError{limit: m.limit})
}

// watch samples the heap while the eval holds the gate, until stop closes;
// then it closes done. goja clears an interrupt once raised, and a native
// caller may swallow it, so a breach or the end of ctx (the time budget)
// is raised again at every tick until the eval ends.
func (m *meter) watch(ctx context.Context, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			switch {
			case m.breached.Load():
				m.rt.Interrupt(&memoryError{limit: m.limit})
			case ctx.Err() != nil:
				m.rt.Interrupt("time budget exceeded")
			case m.start.Load() != 0 && m.over(0):
				m.breach()
			}
		}
	}
}

// occurrences is how often sep occurs in s, without overlaps, for the
// split and replace guards. It reads the strings in place: converting them
// to Go strings would copy what the guard is there to bound.
func occurrences(s, sep goja.String) int {
	n, m := s.Length(), sep.Length()
	if m == 0 {
		return n
	}
	found := 0
	for i := 0; i+m <= n; {
		j := 0
		for j < m && s.CharAt(i+j) == sep.CharAt(j) {
			j++
		}
		if j == m {
			found++
			i += m
		} else {
			i++
		}
	}
	return found
}

// compileGuards compiles guards.js once per Store; a Program is shared by
// runtimes.
func compileGuards() *goja.Program {
	return goja.MustCompile("guards.js", guardsSource, true)
}

// installGuards runs guards.js in a fresh runtime, handing it reserve,
// left and count; reserve and left reach the meter of the eval in progress
// through cur.
func installGuards(rt *goja.Runtime, guards *goja.Program, cur func() *meter) error {
	v, err := rt.RunProgram(guards)
	if err != nil {
		return fmt.Errorf("compiling the memory guards: %w", err)
	}
	install, ok := goja.AssertFunction(v)
	if !ok {
		return errors.New("the memory guards are not a function")
	}
	reserve := func(call goja.FunctionCall) goja.Value {
		m := cur()
		if m == nil {
			return goja.Undefined()
		}
		if n := call.Argument(0).ToFloat(); m.over(int64(min(n, 1<<62))) {
			m.breach()
			panic(rt.NewGoError(&memoryError{limit: m.limit}))
		}
		return goja.Undefined()
	}
	left := func(goja.FunctionCall) goja.Value {
		m := cur()
		if m == nil {
			return rt.ToValue(1 << 53)
		}
		return rt.ToValue(max(m.limit-m.used(), 0))
	}
	count := func(call goja.FunctionCall) goja.Value {
		s, ok := call.Argument(0).(goja.String)
		sep, ok2 := call.Argument(1).(goja.String)
		if !ok || !ok2 {
			return rt.ToValue(0)
		}
		return rt.ToValue(occurrences(s, sep))
	}
	if _, err := install(goja.Undefined(), rt.ToValue(reserve), rt.ToValue(left), rt.ToValue(count)); err != nil {
		return fmt.Errorf("installing the memory guards: %w", err)
	}
	return nil
}
