package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Client is the typed client of agent-svc.
type Client struct{ c *wire.Client }

// NewClient returns a Client over c.
func NewClient(c *wire.Client) *Client { return &Client{c: c} }

// MissedHeartbeats is how many heartbeat intervals a run's owner may fail
// to renew its lease before the lease ends and another replica takes the
// run over (agent-svc/design.md "Durable runs").
const MissedHeartbeats = 3

// minLease keeps a lease from ending on one slow write of a loaded
// store: an owner that cannot renew in time must stop (another replica
// may have claimed the run), and stopping a healthy run costs a takeover.
const minLease = 2 * time.Second

// Lease is how long a run's owner holds it without renewing, for
// heartbeats every hb.
func Lease(hb time.Duration) time.Duration { return max(MissedHeartbeats*hb, minLease) }

// silence is how long a follower waits in silence before it gives up on a
// run: the owner's lease, the takeover sweep and the new owner's start fit
// within it, once over.
func silence(hb time.Duration) time.Duration { return 2*Lease(hb) + 2*hb }

// RunSubject is where a run's events are published, whichever replica owns
// it: a follower that subscribes there sees the run go on after a takeover.
func RunSubject(runID string) string { return RunEvents.For("run-" + runID).Subject }

// Backlog reads a run's recorded events after a sequence number, and says
// whether the run still goes on (false once it ended or paused).
type Backlog func(ctx context.Context, after int64) (events []Event, live bool, err error)

// Run starts a turn and calls onEvent for each of its events, in sequence
// order, until the end event or an approval event (the run pauses until
// the user decides), which are delivered too. When ctx ends the run is
// cancelled on its replica. When the run goes silent for longer than a
// takeover takes, Run returns an unavailable error. The returned
// StartResponse is nil if the run never started.
func (c *Client) Run(ctx context.Context, req *StartRequest, onEvent func(Event)) (*StartResponse, error) {
	sub, err := c.subscribe(req.RunID)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	startCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	ack, err := RunsStart.Call(startCtx, c.c, req)
	cancel()
	if err != nil {
		return nil, err
	}
	hb := time.Duration(ack.HeartbeatMS) * time.Millisecond
	err = c.follow(ctx, sub, req.RunID, hb, 0, nil, onEvent)
	if ctx.Err() != nil {
		_ = RunsCancel.Publish(context.WithoutCancel(ctx), c.c, &CancelEvent{RunID: req.RunID, Reason: "client went away"})
	}
	return ack, err
}

// Follow delivers a run's events after the sequence number after: first
// those backlog returns, then the live ones, until the end or an approval
// event, or until the run is no longer live. hb is the runs' heartbeat
// interval. Following does not cancel the run when ctx ends.
func (c *Client) Follow(ctx context.Context, runID string, after int64, hb time.Duration, backlog Backlog, onEvent func(Event)) error {
	sub, err := c.subscribe(runID)
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	return c.follow(ctx, sub, runID, hb, after, backlog, onEvent)
}

func (c *Client) subscribe(runID string) (*nats.Subscription, error) {
	// A synchronous subscription queues events (up to generous limits)
	// while the caller writes to a slow HTTP client, instead of dropping.
	sub, err := c.c.Conn().SubscribeSync(RunSubject(runID))
	if err != nil {
		return nil, fmt.Errorf("subscribing to the run's events: %w", err)
	}
	if err := sub.SetPendingLimits(1<<16, 64<<20); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("sizing the run's event queue: %w", err)
	}
	return sub, nil
}

// follow reorders a run's events by seq. Heartbeats (seq 0) are passed on
// as they come; a run that moved to another replica republishes its
// recorded events, which fills any gap the old owner left.
//
// Core NATS drops what a node held when it died, so a live event can be
// lost on its way (seen in the chaos run: the events a turn published just
// before its NATS node was killed, its end event among them, never came).
// An owner records every event before it publishes it, so with a backlog
// the follower reads what it missed from the store: at once when a later
// event shows a gap, and when two heartbeats in a row do not come (the lost
// event may be the last, and then no later one shows the gap). Only a run
// that stays silent and unfinished in the store for the whole window is
// reported unavailable.
func (c *Client) follow(ctx context.Context, sub *nats.Subscription, runID string, hb time.Duration, after int64, backlog Backlog, onEvent func(Event)) error {
	if hb <= 0 {
		hb = DefaultHeartbeat
	}
	window := silence(hb)
	next := after + 1
	pending := map[int64]Event{}
	// deliver passes on the events now in order; done is true after an
	// end, approval or ask event.
	deliver := func() (done bool) {
		for {
			e, ok := pending[next]
			if !ok {
				return false
			}
			delete(pending, next)
			next++
			onEvent(e)
			if e.Type == EventEnd || Paused(e.Type) {
				return true
			}
		}
	}
	// refill reads the recorded events after the last one delivered; over
	// is true once the run needs following no more. A failed read is not
	// the run's failure: the window still bounds the wait.
	refill := func() (over, progressed bool, err error) {
		before := next
		evs, live, err := backlog(ctx, next-1)
		if err != nil {
			return false, false, err
		}
		for _, e := range evs {
			if e.Seq >= next {
				pending[e.Seq] = e
			}
		}
		return deliver() || !live, next > before, nil
	}
	if backlog != nil {
		// Subscribed first, so nothing published after the read is missed.
		if over, _, err := refill(); err != nil || over {
			return err
		}
	}
	var gapSince time.Time
	heard, checked := time.Now(), backlog == nil
	for {
		wait := window - time.Since(heard)
		if !checked {
			wait = min(wait, 2*hb-time.Since(heard))
		}
		msgCtx, cancel := context.WithTimeout(ctx, max(wait, 0))
		m, err := sub.NextMsgWithContext(msgCtx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && time.Since(heard) >= window:
			return wire.Errorf(wire.Unavailable, "the agent stopped responding (no heartbeat for %s); the run goes on once an agent replica takes it over (GET /api/runs/%s/stream)", window, runID)
		case err != nil:
			// Two heartbeats missed: the run may have ended with its last
			// events lost, or its owner died and a takeover is under way.
			checked = true
			over, progressed, _ := refill()
			if over {
				return nil
			}
			if progressed {
				heard, checked = time.Now(), false
			}
			continue
		}
		heard, checked = time.Now(), backlog == nil
		ev, err := RunEvents.Decode(m)
		if err != nil {
			return wire.Errorf(wire.Internal, "decoding a run event: %v", err)
		}
		if ev.Seq == 0 {
			// A heartbeat: passed on, so that an idle HTTP stream stays
			// open through proxies.
			onEvent(*ev)
			continue
		}
		if ev.Seq < next {
			continue // a duplicate
		}
		pending[ev.Seq] = *ev
		if deliver() {
			return nil
		}
		if len(pending) == 0 {
			gapSince = time.Time{}
			continue
		}
		if gapSince.IsZero() {
			gapSince = time.Now()
			// A gap: the missing events were recorded before this one was
			// published, so the store has them.
			if backlog != nil {
				if over, _, _ := refill(); over {
					return nil
				}
				if len(pending) == 0 {
					gapSince = time.Time{}
				}
			}
			continue
		}
		// Heartbeats keep coming while an event is missing: a gap that
		// outlives the window means events were lost.
		if time.Since(gapSince) > window {
			return wire.Errorf(wire.Unavailable, "events of the run were lost (missing event %d)", next)
		}
	}
}

// Cancel asks the replica running a run to stop it.
func (c *Client) Cancel(ctx context.Context, ev *CancelEvent) error {
	return RunsCancel.Publish(ctx, c.c, ev)
}

// SessionDeleted tells every replica to forget a session's REPL state.
func (c *Client) SessionDeleted(ctx context.Context, ev *SessionDeletedEvent) error {
	return SessionDeleted.Publish(ctx, c.c, ev)
}
