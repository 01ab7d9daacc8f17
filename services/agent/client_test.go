package agent

import (
	"context"
	"encoding/json"
	"errors"
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
