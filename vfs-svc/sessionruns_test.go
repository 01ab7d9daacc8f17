package vfssvc

import (
	"encoding/json"
	"testing"

	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	"github.com/mirobody/mirobody-go/services/wire"
)

// TestSessionRuns: a run's turn exists from Begin on, Save completes it in
// place, Fail marks only a turn still in progress, and neither reaches
// another account's session.
func TestSessionRuns(t *testing.T) {
	e := start(t, nil)
	ss := sessions.NewSessions(e.client)
	c := ctx(t)
	alice, bob := e.account(t), e.account(t)
	begin := func(account, session, run string) error {
		_, err := ss.Begin(c, &sessions.SessionBeginRequest{AccountID: account, SessionID: session, RunID: run, Question: "q " + run, Title: "q " + run, Agent: "deep"})
		return err
	}
	fail := func(account, session, run string) bool {
		resp, err := ss.Fail(c, &sessions.SessionFailRequest{AccountID: account, SessionID: session, RunID: run, Finish: "unavailable", Error: "the agent stopped responding"})
		wantCode(t, err, "")
		return resp.Marked
	}
	turns := func(session string) []sessions.Turn {
		g, err := ss.Get(c, &sessions.SessionGetRequest{AccountID: alice, SessionID: session})
		wantCode(t, err, "")
		return g.Turns
	}
	wantCode(t, begin(alice, "r1", "run-1"), "")
	wantCode(t, begin(alice, "r1", "run-1"), "") // retried: still one turn
	if ts := turns("r1"); len(ts) != 1 || ts[0].Finish != sessions.FinishRunning || ts[0].Question != "q run-1" || ts[0].RunID != "run-1" {
		t.Fatalf("turns after begin %+v", ts)
	}
	l, err := ss.Load(c, &sessions.SessionLoadRequest{AccountID: alice, SessionID: "r1"})
	wantCode(t, err, "")
	if string(l.Messages) != "[]" || l.Session.Title != "q run-1" || l.Session.Turns != 1 {
		t.Fatalf("a begun session loads as %+v %s", l.Session, l.Messages)
	}

	cases := []struct {
		name string
		err  error
		code wire.Code
	}{
		{"another account's session", begin(bob, "r1", "run-x"), wire.AlreadyExists},
		{"no run id", begin(alice, "r1", ""), wire.InvalidArgument},
		{"fail without a finish", func() error {
			_, err := ss.Fail(c, &sessions.SessionFailRequest{AccountID: alice, SessionID: "r1", RunID: "run-1"})
			return err
		}(), wire.InvalidArgument},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantCode(t, tc.err, tc.code) })
	}
	if fail(bob, "r1", "run-1") {
		t.Fatal("another account marked the turn failed")
	}

	// The run saves: its turn is completed in place, not appended.
	_, err = ss.Save(c, &sessions.SessionSaveRequest{AccountID: alice, SessionID: "r1", Agent: "deep", Messages: json.RawMessage(`[{"role":"user","content":"q run-1"}]`),
		Turn: sessions.Turn{RunID: "run-1", Question: "q run-1", Answer: "a1", Finish: "stop"}})
	wantCode(t, err, "")
	if fail(alice, "r1", "run-1") {
		t.Fatal("a saved turn was marked failed")
	}
	if ts := turns("r1"); len(ts) != 1 || ts[0].Finish != "stop" || ts[0].Answer != "a1" {
		t.Fatalf("turns after save %+v", ts)
	}

	// A second run dies: the gateway marks it, and the turns stay in order.
	wantCode(t, begin(alice, "r1", "run-2"), "")
	if !fail(alice, "r1", "run-2") {
		t.Fatal("the turn in progress was not marked")
	}
	ts := turns("r1")
	if len(ts) != 2 || ts[1].Seq != 2 || ts[1].Finish != "unavailable" || ts[1].Error != "the agent stopped responding" || ts[1].Question != "q run-2" {
		t.Fatalf("turns after fail %+v", ts)
	}
	// A save of a run that never began appends; one without a run id is
	// refused (a repeat of it could not be told from a new turn).
	_, err = ss.Save(c, &sessions.SessionSaveRequest{AccountID: alice, SessionID: "r1", Messages: json.RawMessage(`[]`), Turn: sessions.Turn{RunID: "run-3", Question: "q3", Finish: "stop"}})
	wantCode(t, err, "")
	_, err = ss.Save(c, &sessions.SessionSaveRequest{AccountID: alice, SessionID: "r1", Messages: json.RawMessage(`[]`), Turn: sessions.Turn{Question: "q4", Finish: "stop"}})
	wantCode(t, err, wire.InvalidArgument)
	if ts := turns("r1"); len(ts) != 3 || ts[2].Seq != 3 {
		t.Fatalf("turns after a plain save %+v", ts)
	}
}
