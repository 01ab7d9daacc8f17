package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Client is the typed client of agent-svc.
type Client struct{ c *wire.Client }

// NewClient returns a Client over c.
func NewClient(c *wire.Client) *Client { return &Client{c: c} }

// missedHeartbeats is how many heartbeat intervals may pass in silence
// before a run is declared lost.
const missedHeartbeats = 3

// Run starts a turn and calls onEvent for each of its events, in sequence
// order, until the end event (which is delivered too). When ctx ends the
// run is cancelled on its replica. When the replica goes silent for three
// heartbeat intervals Run returns an unavailable error; the caller reports
// it to its client. The returned StartResponse is nil if the run never
// started.
func (c *Client) Run(ctx context.Context, req *StartRequest, onEvent func(Event)) (*StartResponse, error) {
	nc := c.c.Conn()
	r := *req
	r.Inbox = wire.NewStream()
	// A synchronous subscription queues events (up to generous limits)
	// while the caller writes to a slow HTTP client, instead of dropping.
	sub, err := nc.SubscribeSync(r.Inbox)
	if err != nil {
		return nil, fmt.Errorf("subscribing to the run inbox: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := sub.SetPendingLimits(1<<16, 64<<20); err != nil {
		return nil, fmt.Errorf("sizing the run inbox: %w", err)
	}

	startCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	ack, err := RunsStart.Call(startCtx, c.c, &r)
	cancel()
	if err != nil {
		return nil, err
	}
	hb := time.Duration(ack.HeartbeatMS) * time.Millisecond
	if hb <= 0 {
		hb = DefaultHeartbeat
	}
	window := missedHeartbeats * hb
	next := int64(1)
	pending := map[int64]Event{}
	var gapSince time.Time
	for {
		msgCtx, cancel := context.WithTimeout(ctx, window)
		m, err := sub.NextMsgWithContext(msgCtx)
		cancel()
		switch {
		case ctx.Err() != nil:
			_ = RunsCancel.Publish(context.WithoutCancel(ctx), c.c, &CancelEvent{RunID: r.RunID, Reason: "client went away"})
			return ack, ctx.Err()
		case err != nil:
			return ack, wire.Errorf(wire.Unavailable, "the agent stopped responding (no heartbeat for %s)", window)
		}
		ev, err := RunEvents.Decode(m)
		if err != nil {
			return ack, wire.Errorf(wire.Internal, "decoding a run event: %v", err)
		}
		if ev.Seq < next {
			continue // a duplicate
		}
		pending[ev.Seq] = *ev
		for {
			e, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			onEvent(e)
			if e.Type == EventEnd {
				return ack, nil
			}
		}
		// Heartbeats keep coming while an event is missing: a gap that
		// outlives the heartbeat window means events were lost.
		switch {
		case len(pending) == 0:
			gapSince = time.Time{}
		case gapSince.IsZero():
			gapSince = time.Now()
		case time.Since(gapSince) > window:
			return ack, wire.Errorf(wire.Unavailable, "events of the run were lost (missing event %d)", next)
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
