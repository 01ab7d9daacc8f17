package stack

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/runs"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
)

// TestChatStartSentAgain: agent.runs.start is idempotent, keyed by the
// run id. The same start sent again (its agent replica died before it
// answered, and the wire layer sends it to another) acknowledges the run
// the first one recorded, in the same new session, whether the run still
// runs or has ended, and starts nothing: the account has one session with
// one turn, and the model was asked once. Before, the repeat answered
// already_exists and left a second session whose turn it recorded failed.
func TestChatStartSentAgain(t *testing.T) {
	gate := make(chan struct{})
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		<-gate
		return scripted.Step{Text: "answer to " + r.LastUser()}, nil
	})
	t.Cleanup(srv.Close)
	open := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(open) // before srv.Close, which waits for the model's answer
	st := startChatStack(t, srv, nil)
	ctx := context.Background()
	nc := servicetest.Client(t, st.NATS)
	req := &agent.StartRequest{RunID: uuid.NewString(), AccountID: st.AccountID, Question: "q", Provider: "oa"}
	first, err := agent.RunsStart.Call(ctx, nc, req)
	must(t, err)
	again := func(when string) {
		t.Helper()
		ack, err := agent.RunsStart.Call(ctx, nc, req)
		if err != nil || ack.RunID != req.RunID || ack.SessionID != first.SessionID {
			t.Fatalf("the start sent again %s answers %+v, %v; want the run in session %s", when, ack, err, first.SessionID)
		}
	}
	again("while the run runs")
	open()
	store := runs.NewClient(nc)
	servicetest.Eventually(t, 10*time.Second, func() bool {
		resp, err := store.Events(ctx, &runs.EventsRequest{RunID: req.RunID, AccountID: st.AccountID})
		if err != nil || resp.State != runs.StateDone || len(resp.Events) == 0 {
			return false
		}
		var last agent.Event
		return json.Unmarshal(resp.Events[len(resp.Events)-1].Data, &last) == nil && last.Type == agent.EventEnd
	}, "the run does not end")
	again("after the run ended")

	ss := sessions.NewSessions(nc)
	list, err := ss.List(ctx, &sessions.SessionListRequest{AccountID: st.AccountID})
	must(t, err)
	if len(list.Sessions) != 1 || list.Sessions[0].ID != first.SessionID {
		t.Fatalf("sessions %+v, want one: %s", list.Sessions, first.SessionID)
	}
	got, err := ss.Get(ctx, &sessions.SessionGetRequest{AccountID: st.AccountID, SessionID: first.SessionID})
	must(t, err)
	if len(got.Turns) != 1 || got.Turns[0].Finish != agent.FinishStop || got.Turns[0].Answer != "answer to q" {
		t.Fatalf("turns %+v, want one, answered", got.Turns)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("the model was asked %d times, want once", n)
	}
}
