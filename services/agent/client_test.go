package agent

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/wire"
)

func TestMain(m *testing.M) { servicetest.Main(m) }

// fakeRun answers agent.runs.start and publishes events with the given
// sequence numbers (type end for the last when end is true).
func fakeRun(t *testing.T, nc *nats.Conn, seqs []int64, end bool) {
	t.Helper()
	sub, err := nc.Subscribe(RunsStart.Subject, func(m *nats.Msg) {
		var req StartRequest
		_ = json.Unmarshal(m.Data, &req)
		ack, _ := json.Marshal(StartResponse{RunID: req.RunID, HeartbeatMS: 50})
		_ = m.Respond(ack)
		for i, s := range seqs {
			ev := Event{Seq: s, Type: EventHeartbeat}
			if end && i == len(seqs)-1 {
				ev.Type = EventEnd
			}
			b, _ := json.Marshal(ev)
			_ = nc.Publish(RunSubject(req.RunID), b)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
}

func TestClientRun(t *testing.T) {
	cases := []struct {
		name string
		seqs []int64
		end  bool
		want []int64
		code wire.Code
	}{
		{"in order", []int64{1, 2, 3}, true, []int64{1, 2, 3}, ""},
		{"reordered and duplicated", []int64{2, 1, 1, 3, 4}, true, []int64{1, 2, 3, 4}, ""},
		{"silence", []int64{1}, false, []int64{1}, wire.Unavailable},
		{"lost event", []int64{1, 3, 4}, true, []int64{1}, wire.Unavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url := servicetest.NATS(t)
			nc, err := nats.Connect(url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(nc.Close)
			fakeRun(t, nc, tc.seqs, tc.end)
			c := NewClient(wire.NewClient(wire.ClientOptions{Conn: nc}))
			var got []int64
			_, err = c.Run(context.Background(), &StartRequest{RunID: "r"}, func(e Event) { got = append(got, e.Seq) })
			if tc.code == "" && err != nil || tc.code != "" && !wire.IsCode(err, tc.code) {
				t.Fatalf("err %v, want code %q", err, tc.code)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("delivered %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("delivered %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestClientCancel(t *testing.T) {
	url := servicetest.NATS(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	fakeRun(t, nc, []int64{1}, false)
	cancels := make(chan *nats.Msg, 1)
	sub, err := nc.ChanSubscribe(RunsCancel.Subject, cancels)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	ctx, cancel := context.WithCancel(context.Background())
	c := NewClient(wire.NewClient(wire.ClientOptions{Conn: nc}))
	_, err = c.Run(ctx, &StartRequest{RunID: "run-1"}, func(Event) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	select {
	case m := <-cancels:
		var ev CancelEvent
		if json.Unmarshal(m.Data, &ev) != nil || ev.RunID != "run-1" {
			t.Fatalf("cancel event %s", m.Data)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no cancel event")
	}
}

// TestFollowRefill: events lost on their way (core NATS drops what a dying
// node held) are read back from the store, whether a later event shows the
// gap or the lost one was the last; a run that stays silent and unfinished
// in the store is still reported unavailable after the window. Regression:
// in the chaos run a turn's end event was lost when its NATS node was
// killed, and the follower waited the whole window and reported the agent
// gone although the run had ended.
func TestFollowRefill(t *testing.T) {
	const hb = 50 * time.Millisecond
	cases := []struct {
		name   string
		live   []int64 // published; the last is the end event when stored ends with it
		stored []int64 // in the store once the follower looks again; the last is the end
		done   bool    // the stored run ended
		want   []int64
		code   wire.Code
	}{
		{name: "gap filled", live: []int64{1, 3}, stored: []int64{1, 2, 3, 4}, done: true, want: []int64{1, 2, 3, 4}},
		{name: "lost end", live: []int64{1, 2}, stored: []int64{1, 2, 3}, done: true, want: []int64{1, 2, 3}},
		{name: "all lost", stored: []int64{1, 2}, done: true, want: []int64{1, 2}},
		{name: "silent and running", live: []int64{1}, stored: []int64{1}, want: []int64{1}, code: wire.Unavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := nats.Connect(servicetest.NATS(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(nc.Close)
			c := NewClient(wire.NewClient(wire.ClientOptions{Conn: nc}))
			sub, err := c.subscribe("r")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sub.Unsubscribe() })
			event := func(seq int64) Event {
				ev := Event{Seq: seq, Type: EventText}
				if tc.done && seq == tc.stored[len(tc.stored)-1] {
					ev.Type = EventEnd
				}
				return ev
			}
			reads := 0
			backlog := func(_ context.Context, after int64) ([]Event, bool, error) {
				reads++
				if reads == 1 {
					return nil, true, nil // nothing recorded when the follower subscribed
				}
				var out []Event
				for _, s := range tc.stored {
					if s > after {
						out = append(out, event(s))
					}
				}
				return out, !tc.done, nil
			}
			for _, s := range tc.live {
				b, _ := json.Marshal(event(s))
				if err := nc.Publish(RunSubject("r"), b); err != nil {
					t.Fatal(err)
				}
			}
			var got []int64
			began := time.Now()
			err = c.follow(context.Background(), sub, "r", hb, 0, backlog, func(e Event) { got = append(got, e.Seq) })
			if tc.code == "" && err != nil || tc.code != "" && !wire.IsCode(err, tc.code) {
				t.Fatalf("err %v, want code %q", err, tc.code)
			}
			if tc.code == "" && time.Since(began) >= silence(hb) {
				t.Fatalf("the follower waited the whole window (%s) for what the store had", silence(hb))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("delivered %v, want %v", got, tc.want)
			}
		})
	}
}
