package agentsvc

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/servicetest"
)

// TestOnCancelOwner: a cancel naming an account stops only that
// account's run; one without an account (the gateway's own, when a
// caller's context ends) stops it whoever owns it.
func TestOnCancelOwner(t *testing.T) {
	cases := []struct {
		name, run, account string
		stopped            bool
	}{
		{"the owner", "r1", "alice", true},
		{"another account", "r1", "bob", false},
		{"no account", "r1", "", true},
		{"an unknown run", "r2", "alice", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Options{Log: servicetest.Logger(t)})
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			s.runs["r1"] = runningRun{account: "alice", cancel: cancel}
			data, _ := json.Marshal(agent.CancelEvent{RunID: tc.run, AccountID: tc.account, Reason: "test"})
			s.onCancel(&nats.Msg{Subject: agent.RunsCancel.Subject, Data: data})
			if stopped := ctx.Err() != nil; stopped != tc.stopped {
				t.Fatalf("stopped %v, want %v", stopped, tc.stopped)
			}
		})
	}
}

// TestMergeDeltas: text and reasoning deltas recorded in one batch become
// one event each run of them; other events keep their place.
func TestMergeDeltas(t *testing.T) {
	text := func(s string) agent.Event { return agent.Event{Type: agent.EventText, Text: s} }
	think := func(s string) agent.Event { return agent.Event{Type: agent.EventReasoning, Reasoning: s} }
	call := agent.Event{Type: agent.EventToolCall, ID: "c"}
	cases := []struct {
		name string
		in   []agent.Event
		want []agent.Event
	}{
		{"none", nil, nil},
		{"text run", []agent.Event{text("a"), text("b"), text("c")}, []agent.Event{text("abc")}},
		{"kinds alternate", []agent.Event{think("x"), think("y"), text("a"), call, text("b"), text("c")},
			[]agent.Event{think("xy"), text("a"), call, text("bc")}},
		{"calls stay apart", []agent.Event{call, call}, []agent.Event{call, call}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := mergeDeltas(tc.in)
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(tc.want)
			if string(g) != string(w) {
				t.Fatalf("got %s, want %s", g, w)
			}
		})
	}
}
