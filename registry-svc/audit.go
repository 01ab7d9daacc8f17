package registrysvc

import (
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/vfs/audit"
	"github.com/mirobody/mirobody-go/services/wire"
)

// The audit trail of tool calls (vfs-svc/design.md "Audit log"). A call
// only appends its facts to a bounded queue under a mutex; one goroutine
// turns them into records (decoding the argument names there, off the
// call's path) and publishes them in batches: the first call of a batch
// wakes it, and it waits auditLinger for more to join (design.md "Audit
// log"). When the queue is full the record is dropped and counted: the
// audit log never slows or fails a tool call.

// auditBuffer is how many calls may wait for the publisher.
const auditBuffer = 4096

// maxAuditBatch bounds the records of one published batch; a batch this
// full goes out without waiting out the linger.
const maxAuditBatch = 256

// auditLinger is how long a batch collects calls after its first one.
// Publishing each call as it came cost every call of a lone client a NATS
// publish, a vfs-svc insert and a PostgreSQL round trip next to its own
// work (issue 20); 50 ms folds a busy client's calls into a few batches a
// second while its records still show within a blink.
const auditLinger = 50 * time.Millisecond

// auditCall is what a call hands the auditor.
type auditCall struct {
	at       time.Time
	caller   registry.Caller
	tool     string
	outcome  string
	duration time.Duration
	args     json.RawMessage
	result   int
}

// auditor publishes audit batches.
type auditor struct {
	pub    *wire.Client
	log    *slog.Logger
	linger time.Duration

	mu      sync.Mutex
	queue   []auditCall
	dropped int64

	// kick wakes the publisher: a batch began, or filled up.
	kick chan struct{}
	stop context.CancelFunc
	done chan struct{}
}

// newAuditor starts the publishing goroutine.
func newAuditor(pub *wire.Client, log *slog.Logger) *auditor {
	return startAuditor(pub, log, auditLinger)
}

// startAuditor is newAuditor with the linger given, for tests.
func startAuditor(pub *wire.Client, log *slog.Logger, linger time.Duration) *auditor {
	ctx, cancel := context.WithCancel(context.Background())
	a := &auditor{pub: pub, log: log, linger: linger, kick: make(chan struct{}, 1), stop: cancel, done: make(chan struct{})}
	go a.run(ctx)
	return a
}

// record queues one call without blocking; nil records nothing. Only the
// first call of a batch and the one that fills it wake the publisher.
func (a *auditor) record(c auditCall) {
	if a == nil {
		return
	}
	a.mu.Lock()
	if len(a.queue) >= auditBuffer {
		a.dropped++
		a.mu.Unlock()
		return
	}
	a.queue = append(a.queue, c)
	n := len(a.queue)
	a.mu.Unlock()
	if n == 1 || n == maxAuditBatch {
		select {
		case a.kick <- struct{}{}:
		default:
		}
	}
}

// close publishes what is queued and stops the goroutine.
func (a *auditor) close() {
	if a == nil {
		return
	}
	a.stop()
	<-a.done
}

func (a *auditor) run(ctx context.Context) {
	defer close(a.done)
	linger := time.NewTimer(a.linger)
	linger.Stop()
	for {
		select {
		case <-a.kick:
		case <-ctx.Done():
			a.flush() // what the calls already queued
			return
		}
		if a.queued() < maxAuditBatch {
			linger.Reset(a.linger)
			select {
			case <-linger.C:
			case <-a.kick: // full
				linger.Stop()
			case <-ctx.Done():
				linger.Stop()
			}
		}
		a.flush()
	}
}

// queued is the number of calls waiting.
func (a *auditor) queued() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.queue)
}

// flush publishes every queued call, in batches of at most maxAuditBatch.
func (a *auditor) flush() {
	a.mu.Lock()
	calls, dropped := a.queue, a.dropped
	a.queue, a.dropped = nil, 0
	a.mu.Unlock()
	for len(calls) > 0 {
		n := min(len(calls), maxAuditBatch)
		recs := make([]audit.Record, n)
		for i, c := range calls[:n] {
			recs[i] = c.record()
		}
		calls = calls[n:]
		if err := audit.Recorded.Publish(context.Background(), a.pub, &audit.RecordBatch{Records: recs}); err != nil {
			a.log.Warn("publishing audit records", "err", err, "records", len(recs))
		}
	}
	if dropped > 0 {
		a.log.Warn("audit records dropped: the publisher fell behind", "records", dropped)
	}
}

// record turns a call into its audit record: the argument names, never
// their values.
func (c auditCall) record() audit.Record {
	kind := "mcp"
	if c.caller.Agent != agent.AgentNone {
		kind = "agent"
	}
	return audit.Record{
		Time: c.at.UTC(), AccountID: c.caller.AccountID, CallerKind: kind, Agent: string(c.caller.Agent),
		Tool: c.tool, Outcome: c.outcome, DurationMS: float64(c.duration.Microseconds()) / 1000,
		ArgumentBytes: len(c.args), ResultBytes: c.result, ArgumentKeys: argumentKeys(c.args),
	}
}

// argumentKeys lists the top-level names of an arguments object, sorted;
// arguments that are not an object have none.
func argumentKeys(args json.RawMessage) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil || len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
