package registrysvc

import (
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"sync/atomic"
	"time"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/vfs/audit"
	"github.com/mirobody/mirobody-go/services/wire"
)

// The audit trail of tool calls (vfs-svc/design.md "Audit log"). A call
// only hands its facts to a buffered channel; one goroutine turns them into
// records (decoding the argument names there, off the call's path) and
// publishes them in batches. When the buffer is full the record is dropped
// and counted: the audit log never slows or fails a tool call.

// auditBuffer is how many calls may wait for the publisher.
const auditBuffer = 4096

// maxAuditBatch bounds the records of one published batch.
const maxAuditBatch = 256

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
	pub     *wire.Client
	log     *slog.Logger
	calls   chan auditCall
	dropped atomic.Int64
	stop    context.CancelFunc
	done    chan struct{}
}

// newAuditor starts the publishing goroutine.
func newAuditor(pub *wire.Client, log *slog.Logger) *auditor {
	ctx, cancel := context.WithCancel(context.Background())
	a := &auditor{pub: pub, log: log, calls: make(chan auditCall, auditBuffer), stop: cancel, done: make(chan struct{})}
	go a.run(ctx)
	return a
}

// record queues one call without blocking; nil records nothing.
func (a *auditor) record(c auditCall) {
	if a == nil {
		return
	}
	select {
	case a.calls <- c:
	default:
		a.dropped.Add(1)
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
	for {
		select {
		case c := <-a.calls:
			a.publish(a.batch(c))
		case <-ctx.Done():
			// Flush what the calls already queued.
			for len(a.calls) > 0 {
				a.publish(a.batch(<-a.calls))
			}
			return
		}
	}
}

// batch collects first and whatever else is queued, up to maxAuditBatch:
// under load batches grow, and an idle registry publishes each call at once.
func (a *auditor) batch(first auditCall) []audit.Record {
	recs := []audit.Record{first.record()}
	for len(recs) < maxAuditBatch {
		select {
		case c := <-a.calls:
			recs = append(recs, c.record())
		default:
			return recs
		}
	}
	return recs
}

func (a *auditor) publish(recs []audit.Record) {
	if err := audit.Recorded.Publish(context.Background(), a.pub, &audit.RecordBatch{Records: recs}); err != nil {
		a.log.Warn("publishing audit records", "err", err, "records", len(recs))
	}
	if n := a.dropped.Swap(0); n > 0 {
		a.log.Warn("audit records dropped: the publisher fell behind", "records", n)
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
