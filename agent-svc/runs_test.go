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
