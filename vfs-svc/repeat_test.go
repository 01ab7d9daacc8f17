package vfssvc

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/mirobody/mirobody-go/services/vfs/runs"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	"github.com/mirobody/mirobody-go/services/wire"
)

// TestWritesSentAgain: every write agent-svc makes for a run is marked
// Idempotent, so the wire layer sends it again when the vfs-svc replica
// handling it dies, possibly after it committed. The same request sent
// twice answers the same, and storage holds what one request stored: one
// turn, one event per seq, one takeover.
func TestWritesSentAgain(t *testing.T) {
	e := start(t, nil)
	ss := sessions.NewSessions(e.client)
	rs := runs.NewClient(e.client)
	c := ctx(t)
	alice := e.account(t)
	// run creates a run of alice's session s owned by "owner-"+run.
	run := func(t *testing.T, s, run string) {
		t.Helper()
		_, err := rs.Create(c, &runs.CreateRequest{RunID: run, AccountID: alice, SessionID: s, Request: json.RawMessage(`{}`), Owner: "owner-" + run, LeaseMS: 60000})
		wantCode(t, err, "")
	}
	begin := func(t *testing.T, s, run string) {
		t.Helper()
		_, err := ss.Begin(c, &sessions.SessionBeginRequest{AccountID: alice, SessionID: s, RunID: run, Question: "q"})
		wantCode(t, err, "")
	}
	save := &sessions.SessionSaveRequest{AccountID: alice, Messages: json.RawMessage(`[{"role":"user","content":"q"}]`),
		Turn: sessions.Turn{Question: "q", Answer: "a", Finish: "stop", Events: json.RawMessage(`[{"type":"text","text":"a"}]`)}}
	// turns reads session s's turns and checks that there is one, of run.
	oneTurn := func(t *testing.T, s, run, finish string) {
		t.Helper()
		g, err := ss.Get(c, &sessions.SessionGetRequest{AccountID: alice, SessionID: s})
		wantCode(t, err, "")
		if len(g.Turns) != 1 || g.Session.Turns != 1 || g.Turns[0].RunID != run || g.Turns[0].Finish != finish {
			t.Fatalf("session %s: %+v, turns %+v; want one turn of %s, %s", s, g.Session, g.Turns, run, finish)
		}
	}
	cases := []struct {
		name string
		// prep, if set, makes the run ready for the request.
		prep func(t *testing.T, s, run string)
		// do sends the request and returns its answer.
		do func(t *testing.T, s, run string) (any, error)
		// check looks at what is stored after two.
		check func(t *testing.T, s, run string)
	}{
		{"begin", nil, func(t *testing.T, s, r string) (any, error) {
			return ss.Begin(c, &sessions.SessionBeginRequest{AccountID: alice, SessionID: s, RunID: r, Question: "q"})
		}, func(t *testing.T, s, r string) { oneTurn(t, s, r, sessions.FinishRunning) }},
		{"save of a begun turn", nil, func(t *testing.T, s, r string) (any, error) {
			req := *save
			req.SessionID, req.Turn.RunID = s, r
			return ss.Save(c, &req)
		}, func(t *testing.T, s, r string) { oneTurn(t, s, r, "stop") }},
		{"save of a turn never begun", nil, func(t *testing.T, s, r string) (any, error) {
			req := *save
			req.SessionID, req.Turn.RunID = s, r+"-unbegun"
			return ss.Save(c, &req)
		}, func(t *testing.T, s, r string) {
			g, err := ss.Get(c, &sessions.SessionGetRequest{AccountID: alice, SessionID: s})
			wantCode(t, err, "")
			if len(g.Turns) != 2 || g.Session.Turns != 2 || g.Turns[1].RunID != r+"-unbegun" {
				t.Fatalf("turns %+v: want the begun one and one saved", g.Turns)
			}
		}},
		{"fail", nil, func(t *testing.T, s, r string) (any, error) {
			return ss.Fail(c, &sessions.SessionFailRequest{AccountID: alice, SessionID: s, RunID: r, Finish: "unavailable", Error: "gone"})
		}, func(t *testing.T, s, r string) { oneTurn(t, s, r, "unavailable") }},
		{"rename", nil, func(t *testing.T, s, r string) (any, error) {
			return ss.Rename(c, &sessions.SessionRenameRequest{AccountID: alice, SessionID: s, Title: "a  title"})
		}, func(t *testing.T, s, r string) {
			g, err := ss.Get(c, &sessions.SessionGetRequest{AccountID: alice, SessionID: s})
			wantCode(t, err, "")
			if g.Session.Title != "a title" {
				t.Fatalf("title %q", g.Session.Title)
			}
		}},
		{"create", nil, func(t *testing.T, s, r string) (any, error) {
			got, err := rs.Create(c, &runs.CreateRequest{RunID: r + "-new", AccountID: alice, SessionID: s, Request: json.RawMessage(`{}`), Owner: "o", LeaseMS: 60000})
			if got != nil {
				got.AgeMS = 0
			}
			return got, err
		}, func(t *testing.T, s, r string) {
			_, err := rs.Create(c, &runs.CreateRequest{RunID: r + "-new", AccountID: alice, SessionID: s, Request: json.RawMessage(`{}`), Owner: "other", LeaseMS: 60000})
			wantCode(t, err, wire.AlreadyExists)
		}},
		{"record", nil, func(t *testing.T, s, r string) (any, error) {
			return rs.Record(c, &runs.RecordRequest{RunID: r, Owner: "owner-" + r, LeaseMS: 60000, Checkpoint: json.RawMessage(`{"steps":1}`),
				Events: []runs.Event{{Seq: 1, Data: json.RawMessage(`{"type":"start"}`)}, {Seq: 2, Data: json.RawMessage(`{"type":"text"}`)}}})
		}, func(t *testing.T, s, r string) {
			evs, err := rs.Events(c, &runs.EventsRequest{RunID: r, AccountID: alice})
			wantCode(t, err, "")
			if len(evs.Events) != 2 || evs.Events[1].Seq != 2 || evs.State != runs.StateRunning {
				t.Fatalf("events %+v: want 2 once each", evs)
			}
		}},
		{"record that pauses", nil, func(t *testing.T, s, r string) (any, error) {
			return rs.Record(c, &runs.RecordRequest{RunID: r, Owner: "owner-" + r, LeaseMS: 60000, Approval: &runs.Approval{ToolCallID: "c1", Tool: "t", Arguments: json.RawMessage(`{}`)},
				Events: []runs.Event{{Seq: 1, Data: json.RawMessage(`{"type":"approval"}`)}}})
		}, func(t *testing.T, s, r string) {
			evs, err := rs.Events(c, &runs.EventsRequest{RunID: r, AccountID: alice})
			wantCode(t, err, "")
			if len(evs.Events) != 1 || evs.State != runs.StatePaused || evs.Approval == nil {
				t.Fatalf("events %+v: want paused with one event", evs)
			}
			// Pausing on another call is not the same request: fenced off.
			_, err = rs.Record(c, &runs.RecordRequest{RunID: r, Owner: "owner-" + r, LeaseMS: 60000, Approval: &runs.Approval{ToolCallID: "c2", Tool: "t", Arguments: json.RawMessage(`{}`)}})
			wantCode(t, err, wire.FailedPrecondition)
		}},
		{"claim", func(t *testing.T, s, r string) {
			// The owner releases the run (as a replica that stops does).
			_, err := rs.Record(c, &runs.RecordRequest{RunID: r, Owner: "owner-" + r})
			wantCode(t, err, "")
		}, func(t *testing.T, s, r string) (any, error) {
			got, err := rs.Claim(c, &runs.ClaimRequest{RunID: r, Owner: "claimer-" + r, LeaseMS: 60000})
			if got != nil {
				got.Run.AgeMS = 0
			}
			return got, err
		}, func(t *testing.T, s, r string) {
			resp, err := rs.Claim(c, &runs.ClaimRequest{RunID: r, Owner: "another", LeaseMS: 60000})
			wantCode(t, err, "")
			if resp.Claimed {
				t.Fatalf("the run claimed again by another owner: %+v", resp.Run)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, r := "repeat-"+uuid.NewString()[:8], "run-"+uuid.NewString()
			run(t, s, r)
			begin(t, s, r)
			if tc.prep != nil {
				tc.prep(t, s, r)
			}
			first, err := tc.do(t, s, r)
			wantCode(t, err, "")
			again, err := tc.do(t, s, r)
			wantCode(t, err, "")
			if !reflect.DeepEqual(first, again) {
				t.Fatalf("sent again it answers\n%+v\nwant, as the first time,\n%+v", again, first)
			}
			tc.check(t, s, r)
		})
	}
}
