package agentsvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/agent-svc/internal/turn"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/vfs/runs"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Causes that end a run on this replica without saving its turn: another
// replica goes on with it (agent-svc/design.md "Durable runs").
var (
	// errLost: the lease could not be renewed in time, or another replica
	// claimed the run; this replica must not write for it any more.
	errLost = errors.New("the run's lease was lost to another replica")
	// errHandover: the replica is stopping; it releases the lease so that
	// another replica resumes the run at once.
	errHandover = errors.New("agent-svc is stopping; the run is handed over")
)

// recorder makes a run durable: it numbers the run's events, records them
// in vfs-svc before publishing them (so that a follower can replay every
// event it saw), records checkpoints, and renews the owner's lease with
// every heartbeat. One goroutine (loop) talks to vfs-svc, so that events
// keep their order; text deltas that pile up meanwhile go out merged.
type recorder struct {
	s       *Service
	runID   string
	owner   string
	hb      time.Duration
	lease   time.Duration
	subject wire.Event[agent.Event]
	// stopRun ends the run (lost lease, the user's cancel).
	stopRun context.CancelCauseFunc

	mu  sync.Mutex
	buf []agent.Event
	// numbered are events with their seq, not yet recorded.
	numbered []numberedEvent
	seq      int64
	cp       json.RawMessage
	cpGen    int
	approval *runs.Approval
	// takeDecision clears the run's decision with the next checkpoint.
	takeDecision bool
	lastOK       time.Time
	lost, paused bool

	kick  chan struct{}
	syncs chan chan error
	stop  chan bool
	done  chan struct{}
}

type numberedEvent struct {
	ev   agent.Event
	data json.RawMessage
}

func newRecorder(s *Service, runID, owner string, seq int64, hb time.Duration, stopRun context.CancelCauseFunc) *recorder {
	return &recorder{s: s, runID: runID, owner: owner, seq: seq, hb: hb, lease: agent.Lease(hb), stopRun: stopRun,
		subject: agent.RunEvents.For("run-" + runID), lastOK: time.Now(),
		kick: make(chan struct{}, 1), syncs: make(chan chan error), stop: make(chan bool), done: make(chan struct{})}
}

// add queues an event (not a heartbeat) for recording and publishing.
func (rec *recorder) add(ev agent.Event) {
	rec.mu.Lock()
	rec.buf = append(rec.buf, ev)
	rec.mu.Unlock()
	select {
	case rec.kick <- struct{}{}:
	default:
	}
}

// loop records and publishes until stop; release hands the lease back.
func (rec *recorder) loop() {
	defer close(rec.done)
	beat := time.NewTicker(rec.hb)
	defer beat.Stop()
	for {
		select {
		case <-rec.kick:
			_ = rec.flush()
		case <-beat.C:
			if rec.flush() == nil {
				rec.publish(&agent.Event{Type: agent.EventHeartbeat})
			}
		case reply := <-rec.syncs:
			reply <- rec.flushSure()
		case release := <-rec.stop:
			_ = rec.flushSure()
			if release {
				rec.release()
			}
			return
		}
	}
}

// sync returns once everything queued so far is recorded, or the run is
// lost.
func (rec *recorder) sync(ctx context.Context) error {
	reply := make(chan error, 1)
	select {
	case rec.syncs <- reply:
	case <-rec.done:
		return errLost
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	return <-reply
}

// close records what is left and stops the loop; release hands the lease
// back for another replica to resume the run at once.
func (rec *recorder) close(release bool) {
	select {
	case rec.stop <- release:
		<-rec.done
	case <-rec.done:
	}
}

// flushSure retries flush until it succeeds or the run is lost.
func (rec *recorder) flushSure() error {
	for {
		err := rec.flush()
		if err == nil || errors.Is(err, errLost) {
			return err
		}
		select {
		case <-time.After(rec.hb / 4):
		case <-rec.s.halted.Done():
			return err
		}
	}
}

// flush records the queued events and checkpoint, renewing the lease, and
// then publishes the events.
func (rec *recorder) flush() error {
	rec.mu.Lock()
	if rec.lost || rec.paused {
		rec.mu.Unlock()
		return errLost
	}
	budget := rec.budget()
	for _, ev := range mergeDeltas(rec.buf) {
		rec.seq++
		ev.Seq = rec.seq
		data, err := json.Marshal(ev)
		if err == nil && len(data) > budget {
			// Recorded (and streamed) without its payload: the event
			// would not fit a record, and the run would stall on it.
			rec.s.log.Warn("a run event is over the NATS max payload; recording it without its content", "run_id", rec.runID, "type", ev.Type)
			ev = withoutPayload(ev, rec.s.node.Client.MaxPayload())
			data, err = json.Marshal(ev)
		}
		if err != nil {
			rec.mu.Unlock()
			return fmt.Errorf("encoding a run event: %w", err)
		}
		rec.numbered = append(rec.numbered, numberedEvent{ev: ev, data: data})
	}
	rec.buf = nil
	req := &runs.RecordRequest{RunID: rec.runID, Owner: rec.owner, LeaseMS: int(rec.lease.Milliseconds()), Checkpoint: rec.cp,
		Approval: rec.approval, TakeDecision: rec.takeDecision && rec.cp != nil}
	// One record carries what fits; the rest goes with the next one.
	size := len(req.Checkpoint)
	n := 0
	for _, e := range rec.numbered {
		if n > 0 && size+len(e.data) > budget*2 {
			break
		}
		size += len(e.data)
		req.Events = append(req.Events, runs.Event{Seq: e.ev.Seq, Data: e.data})
		n++
	}
	if n < len(rec.numbered) {
		select {
		case rec.kick <- struct{}{}:
		default:
		}
	}
	gen, evs := rec.cpGen, rec.numbered[:n]
	rec.mu.Unlock()

	ctx, cancel := context.WithTimeout(rec.s.halted, rec.lease)
	resp, err := rec.s.runStore.Record(ctx, req)
	cancel()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if err != nil {
		if wire.IsCode(err, wire.FailedPrecondition) || time.Since(rec.lastOK) > rec.lease {
			rec.lost = true
			rec.s.log.Warn("a run was lost to another replica", "run_id", rec.runID, "err", err)
			rec.stopRun(errLost)
			return errLost
		}
		return fmt.Errorf("recording the run: %w", err)
	}
	rec.lastOK = time.Now()
	rec.numbered = rec.numbered[len(evs):]
	if rec.cpGen == gen {
		rec.cp, rec.takeDecision = nil, rec.takeDecision && req.Checkpoint == nil
	}
	if req.Approval != nil {
		rec.approval, rec.paused = nil, true
	}
	for _, n := range evs {
		rec.publish(&n.ev)
	}
	if resp.Cancelled {
		rec.stopRun(fmt.Errorf("cancelled: the user stopped the run: %w", context.Canceled))
	}
	return nil
}

func (rec *recorder) publish(ev *agent.Event) {
	if err := rec.subject.Publish(context.Background(), rec.s.node.Client, ev); err != nil {
		rec.s.log.Warn("publishing a run event failed", "run_id", rec.runID, "err", err)
	}
}

// budget is the size of an event (and of a checkpoint) that a record
// still carries: a quarter of the NATS max payload, which leaves room for
// the rest of the record.
func (rec *recorder) budget() int { return int(rec.s.node.Client.MaxPayload() / 4) }

// withoutPayload is ev without its arguments, content or text, saying so:
// a lost event would stall its followers until they declare the run lost.
func withoutPayload(ev agent.Event, limit int64) agent.Event {
	return agent.Event{Seq: ev.Seq, Type: ev.Type, ID: ev.ID, Name: ev.Name, ToolCallID: ev.ToolCallID, Status: ev.Status, ErrorKind: ev.ErrorKind, Truncated: true,
		Message: fmt.Sprintf("this %s event is too large to stream (the limit is %d bytes); its content is left out", ev.Type, limit)}
}

// release ends the lease now, so that another replica claims the run on
// its next sweep instead of waiting for the lease to run out.
func (rec *recorder) release() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rec.s.halted), rec.lease)
	defer cancel()
	if _, err := rec.s.runStore.Record(ctx, &runs.RecordRequest{RunID: rec.runID, Owner: rec.owner}); err != nil {
		rec.s.log.Warn("releasing a run failed; another replica takes it over when its lease ends", "run_id", rec.runID, "err", err)
	}
}

// Save implements turn.Durable. A checkpoint too large for a record is
// skipped with a warning: a takeover then resumes from the one before it.
func (rec *recorder) Save(ctx context.Context, cp *turn.Checkpoint) error {
	data, err := json.Marshal(cp)
	if err != nil {
		return fmt.Errorf("encoding a checkpoint: %w", err)
	}
	if len(data) > rec.budget()*2 {
		rec.s.log.Warn("a run's checkpoint is over the NATS max payload; the run goes on without it", "run_id", rec.runID, "bytes", len(data))
		return nil
	}
	rec.mu.Lock()
	rec.cp = data
	rec.cpGen++
	rec.mu.Unlock()
	return rec.sync(ctx)
}

// Pause implements turn.Durable: the approval (or ask) event, the
// checkpoint and the paused state are recorded together.
func (rec *recorder) Pause(ctx context.Context, cp *turn.Checkpoint, call llm.ToolCall, ask *turn.Ask) error {
	data, err := json.Marshal(cp)
	if err != nil {
		return fmt.Errorf("encoding a checkpoint: %w", err)
	}
	if len(data) > rec.budget()*2 {
		return fmt.Errorf("pausing for the user: the run's state (%d bytes) is over the NATS max payload", len(data))
	}
	rec.mu.Lock()
	rec.cp = data
	rec.cpGen++
	rec.approval = &runs.Approval{ToolCallID: call.ID, Tool: call.Name, Arguments: call.Args}
	ev := agent.Event{Type: agent.EventApproval, ID: call.ID, Name: call.Name, Args: call.Args}
	if ask != nil {
		var p struct {
			Message string          `json:"message"`
			Schema  json.RawMessage `json:"requestedSchema"`
		}
		_ = json.Unmarshal(ask.Params, &p) // the registry checked its shape
		rec.approval.Ask = ask.Params
		ev = agent.Event{Type: agent.EventAsk, ID: call.ID, Name: call.Name, Message: p.Message, Schema: p.Schema}
	}
	rec.buf = append(rec.buf, ev)
	rec.mu.Unlock()
	if err := rec.sync(ctx); err != nil {
		return err
	}
	return turn.ErrPaused
}

// isPaused says whether the run paused for an approval.
func (rec *recorder) isPaused() bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.paused
}

// mergeDeltas joins consecutive text and reasoning deltas, which a slow
// store would otherwise record one row each.
func mergeDeltas(evs []agent.Event) []agent.Event {
	var out []agent.Event
	for _, ev := range evs {
		if n := len(out); n > 0 && ev.Type == out[n-1].Type && (ev.Type == agent.EventText || ev.Type == agent.EventReasoning) {
			out[n-1].Text += ev.Text
			out[n-1].Reasoning += ev.Reasoning
			continue
		}
		out = append(out, ev)
	}
	return out
}
