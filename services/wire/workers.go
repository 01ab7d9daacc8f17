package wire

import (
	"sync/atomic"
	"time"
)

// workerLinger is how long an idle handler goroutine waits for another
// request before it exits.
const workerLinger = 30 * time.Second

// workers are the goroutines that run an endpoint's handlers. A request
// goes to an idle worker when one is waiting, else to a new one, so
// requests still run concurrently (the endpoint's semaphore bounds how
// many); a worker that stays idle for linger exits. Reusing them keeps the
// stacks they grew: a fresh goroutine per request grew its stack, copying
// it, several times per registry tool call (design.md "Handler
// goroutines").
type workers struct {
	idle   chan func() // unbuffered: a send succeeds only into a waiting worker
	linger time.Duration
	// quit, once closed, ends the idle workers (the service stopped).
	quit <-chan struct{}
	// started counts the goroutines started, for tests.
	started atomic.Int64
}

// run runs job on an idle worker, or on a new one.
func (w *workers) run(job func()) {
	select {
	case w.idle <- job:
	default:
		w.started.Add(1)
		go w.loop(job)
	}
}

// loop runs job, then whatever jobs come while it waits, until it has
// waited linger for nothing or the service stopped.
func (w *workers) loop(job func()) {
	t := time.NewTimer(w.linger)
	defer t.Stop()
	for {
		job()
		t.Reset(w.linger)
		select {
		case job = <-w.idle:
		case <-t.C:
			return
		case <-w.quit:
			return
		}
	}
}
