package jsrepl

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"
)

// goja has no allocation limit, so the memory budget is kept from outside
// (design.md, "js_eval on goja"): a ledger samples the process heap and
// books its growth on the evals running JavaScript meanwhile, in equal
// shares; a watcher per eval interrupts the runtime over budget; the
// builtins that allocate in one native call are guarded by guards.js and
// ask for their bytes first.

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

// ledger books the process heap's growth on the evals that run JavaScript
// (hold a slot). One eval running alone is charged exactly its growth.
// Evals running together split each sample's growth in proportion to the
// minor page faults of their threads since the last sample (faults.go):
// growing the heap touches new pages, reusing garbage does not, so an
// eval that allocates little beside one that grows is charged little.
// Without faults to go by (none, or no /proc), and for the shrinking a
// collection brings, the split is equal (design.md says why).
type ledger struct {
	mu     sync.Mutex
	last   int64
	active map[*meter]struct{}
}

func newLedger() *ledger { return &ledger{active: map[*meter]struct{}{}} }

// settleLocked books the heap's change since the last sample; l.mu is held.
func (l *ledger) settleLocked() {
	h := heapBytes()
	d := h - l.last
	l.last = h
	var total int64
	for m := range l.active {
		f, ok := threadFaults(m.tid)
		m.faults, m.lastFaults = max(f-m.lastFaults, 0), f
		if !ok {
			m.faults = 0
		}
		total += m.faults
	}
	n := int64(len(l.active))
	for m := range l.active {
		if d > 0 && total > 0 {
			m.grown += d * m.faults / total
		} else if n > 0 {
			m.grown += d / n
		}
	}
}

// settle books the heap's change and returns m's usage.
func (l *ledger) settle(m *meter) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.settleLocked()
	return m.base + m.grown
}

// estimate is m's usage with the heap's growth since the last sample
// booked on m alone: an upper bound, cheap enough for every guarded call
// (no /proc reads, no splitting).
func (l *ledger) estimate(m *meter) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return m.base + m.grown + max(heapBytes()-l.last, 0)
}

// join starts charging m; growth before it is its predecessors'.
func (l *ledger) join(m *meter) {
	l.mu.Lock()
	l.settleLocked()
	m.tid = currentThread()
	m.lastFaults, _ = threadFaults(m.tid)
	l.active[m] = struct{}{}
	m.holding.Store(true)
	l.mu.Unlock()
}

// leave stops charging m and moves its growth into its base.
func (l *ledger) leave(m *meter) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.settleLocked()
	delete(l.active, m)
	m.holding.Store(false)
	m.base += m.grown
	m.grown = 0
	return m.base
}

// meter accounts one eval's memory, the session's state before it plus
// its share of the heap growth while it ran JavaScript, against the budget.
type meter struct {
	rt     *goja.Runtime
	ledger *ledger
	limit  int64
	// slack is the growth below which a hold's booked growth, garbage
	// included, is taken as is rather than confirmed by a collection.
	slack int64
	// deadline ends the eval's time budget; regular expressions get the
	// time left (regex.go).
	deadline time.Time
	// base and grown are guarded by ledger.mu: base is the session's
	// state before this eval plus the growth of its finished holds,
	// grown the growth booked on the current hold.
	base, grown int64
	// tid is the thread the eval's goroutine is locked to while it holds
	// a slot; lastFaults its fault count at the last sample, faults the
	// count since the one before (ledger.mu guards all three).
	tid                int
	lastFaults, faults int64
	holding            atomic.Bool
	// quiet is the usage below which the watcher does not collect again
	// after a collection showed the session within budget.
	quiet    atomic.Int64
	breached atomic.Bool
	// collected is closed when the watcher's confirming collection ends;
	// nil when none runs. Only the watcher uses it.
	collected chan struct{}
}

func newMeter(rt *goja.Runtime, l *ledger, limit, retained int64) *meter {
	return &meter{rt: rt, ledger: l, limit: limit, slack: max(limit/64, 1<<20), base: retained}
}

// hold starts charging the meter; the eval has a slot. Its goroutine
// stays on one thread until unhold, so that the thread's page faults are
// the eval's.
func (m *meter) hold() {
	runtime.LockOSThread()
	m.ledger.join(m)
}

// unhold stops charging it and books the hold's growth. A large growth
// is measured after a collection, so that the eval's garbage is not
// booked as state.
func (m *meter) unhold() {
	if u := m.ledger.settle(m); u-m.peekBase() > m.slack {
		runtime.GC()
	}
	over := m.ledger.leave(m) > m.limit
	runtime.UnlockOSThread()
	if over {
		m.breach()
	}
}

func (m *meter) peekBase() int64 {
	m.ledger.mu.Lock()
	defer m.ledger.mu.Unlock()
	return m.base
}

// used is the session's estimated memory now: the cheap upper bound
// while that is within the budget, else its share of the growth.
func (m *meter) used() int64 {
	if !m.holding.Load() {
		return m.peekBase()
	}
	if u := m.ledger.estimate(m); u <= m.limit {
		return u
	}
	return m.ledger.settle(m)
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

// overWatched is over(0) for the watcher. Its confirming collection runs
// on another goroutine, because the runtime goes on meanwhile: a string
// doubling allocates hundreds of MB per step, and a collection of a large
// heap takes longer than a step. While it runs, twice the budget ends the
// eval without waiting for it.
func (m *meter) overWatched() bool {
	u := m.used()
	if m.collected != nil {
		select {
		case <-m.collected:
		default:
			return u > 2*m.limit
		}
		m.collected = nil
		u = m.used()
		m.quiet.Store(u + m.slack)
		return u > m.limit
	}
	if u <= m.limit || u <= m.quiet.Load() {
		return false
	}
	done := make(chan struct{})
	m.collected = done
	go func() {
		runtime.GC()
		close(done)
	}()
	return false
}

// breach marks the eval over budget and interrupts the runtime.
func (m *meter) breach() {
	m.breached.Store(true)
	m.rt.Interrupt(&memoryError{limit: m.limit})
}

// watch samples the heap while the eval holds a slot, until stop closes;
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
			case m.holding.Load() && m.overWatched():
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
// left, count and regex; reserve, left and regex reach the meter of the
// eval in progress through cur.
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
	if _, err := install(goja.Undefined(), rt.ToValue(reserve), rt.ToValue(left), rt.ToValue(count), rt.ToValue(regexGuard(cur))); err != nil {
		return fmt.Errorf("installing the memory guards: %w", err)
	}
	return nil
}
