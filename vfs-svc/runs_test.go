package vfssvc

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"github.com/mirobody/mirobody-go/services/vfs/runs"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	"github.com/mirobody/mirobody-go/services/wire"
)

// TestRuns: the lease is a fencing token (a replica that lost a run can
// record nothing for it), an expired lease is claimed once, events replay
// in order for the owner account only, a paused run is claimable only
// after the user's decision or cancel, and saving the turn ends the run.
func TestRuns(t *testing.T) {
	e := start(t, nil)
	rs := runs.NewClient(e.client)
	c := ctx(t)
	alice, bob := e.account(t), e.account(t)
	id := uuid.NewString()
	_, err := rs.Create(c, &runs.CreateRequest{RunID: id, AccountID: alice, SessionID: "s1", Request: json.RawMessage(`{"question":"q"}`), Owner: "a", LeaseMS: 60000})
	wantCode(t, err, "")
	ev := func(seq int64) runs.Event {
		return runs.Event{Seq: seq, Data: json.RawMessage(`{"type":"text","text":"x"}`)}
	}
	record := func(owner string, req runs.RecordRequest) error {
		req.RunID, req.Owner = id, owner
		if req.LeaseMS == 0 {
			req.LeaseMS = 60000
		}
		_, err := rs.Record(c, &req)
		return err
	}
	claim := func(owner string) bool {
		resp, err := rs.Claim(c, &runs.ClaimRequest{RunID: id, Owner: owner, LeaseMS: 60000})
		wantCode(t, err, "")
		return resp.Claimed
	}
	wantCode(t, record("a", runs.RecordRequest{Events: []runs.Event{ev(1), ev(2)}, Checkpoint: json.RawMessage(`{"steps":1}`)}), "")
	if claim("b") {
		t.Fatal("a run with a live lease was claimed")
	}
	// a releases the lease (it stops); b claims the run; a is fenced off.
	_, err = rs.Record(c, &runs.RecordRequest{RunID: id, Owner: "a"})
	wantCode(t, err, "")
	resp, err := rs.Claim(c, &runs.ClaimRequest{Owner: "b", LeaseMS: 60000})
	wantCode(t, err, "")
	if !resp.Claimed || resp.Run.ID != id || resp.Run.LastSeq != 2 || string(resp.Run.Checkpoint) != `{"steps":1}` || resp.Run.Takeovers != 1 {
		t.Fatalf("claim %+v", resp)
	}
	cases := []struct {
		name string
		err  error
		code wire.Code
	}{
		{"the old owner records", record("a", runs.RecordRequest{Events: []runs.Event{ev(3)}}), wire.FailedPrecondition},
		{"the new owner records", record("b", runs.RecordRequest{Events: []runs.Event{ev(3)}}), ""},
		{"a retried record", record("b", runs.RecordRequest{Events: []runs.Event{ev(3)}}), ""},
		{"another account reads events", func() error {
			_, err := rs.Events(c, &runs.EventsRequest{RunID: id, AccountID: bob})
			return err
		}(), wire.NotFound},
		{"another account decides", func() error {
			_, err := rs.Decide(c, &runs.DecideRequest{RunID: id, AccountID: bob, Decision: runs.Decision{ToolCallID: "c1", Decision: runs.DecisionApprove}})
			return err
		}(), wire.FailedPrecondition},
		{"a decision on a running run", func() error {
			_, err := rs.Decide(c, &runs.DecideRequest{RunID: id, AccountID: alice, Decision: runs.Decision{ToolCallID: "c1", Decision: runs.DecisionApprove}})
			return err
		}(), wire.FailedPrecondition},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantCode(t, tc.err, tc.code) })
	}
	evs, err := rs.Events(c, &runs.EventsRequest{RunID: id, AccountID: alice, After: 1})
	wantCode(t, err, "")
	if len(evs.Events) != 2 || evs.Events[0].Seq != 2 || evs.Events[1].Seq != 3 || evs.State != runs.StateRunning {
		t.Fatalf("events after 1: %+v", evs)
	}

	// b pauses for an approval: nobody owns the run, nobody claims it.
	approval := &runs.Approval{ToolCallID: "c1", Tool: "write_file", Arguments: json.RawMessage(`{"a":1}`)}
	wantCode(t, record("b", runs.RecordRequest{Events: []runs.Event{ev(4)}, Approval: approval, LeaseMS: 1}), "")
	wantCode(t, record("b", runs.RecordRequest{}), wire.FailedPrecondition)
	if claim("c") {
		t.Fatal("a paused run was claimed")
	}
	evs, err = rs.Events(c, &runs.EventsRequest{RunID: id, AccountID: alice, After: 4})
	wantCode(t, err, "")
	if evs.State != runs.StatePaused || evs.Approval == nil || evs.Approval.ToolCallID != "c1" {
		t.Fatalf("a paused run reads as %+v", evs)
	}
	for _, tc := range []struct {
		name string
		d    runs.Decision
		code wire.Code
	}{
		{"an edit without an object", runs.Decision{Decision: runs.DecisionEdit, Arguments: json.RawMessage(`[1]`)}, wire.InvalidArgument},
		{"an answer without an action", runs.Decision{Decision: runs.DecisionAnswer, Answer: json.RawMessage(`{"action":"maybe"}`)}, wire.InvalidArgument},
		{"an answer to an approval", runs.Decision{Decision: runs.DecisionAnswer, Answer: json.RawMessage(`{"action":"accept","content":{}}`)}, wire.FailedPrecondition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.d.ToolCallID = "c1"
			_, err := rs.Decide(c, &runs.DecideRequest{RunID: id, AccountID: alice, Decision: tc.d})
			wantCode(t, err, tc.code)
		})
	}
	_, err = rs.Decide(c, &runs.DecideRequest{RunID: id, AccountID: alice, Decision: runs.Decision{ToolCallID: "c1", Decision: runs.DecisionReject, Reason: "no"}})
	wantCode(t, err, "")
	resp, err = rs.Claim(c, &runs.ClaimRequest{RunID: id, Owner: "c", LeaseMS: 60000})
	wantCode(t, err, "")
	if !resp.Claimed || resp.Run.Decision == nil || resp.Run.Decision.Reason != "no" || resp.Run.Approval != nil {
		t.Fatalf("the decided run claims as %+v", resp)
	}

	// Saving the turn ends the run; the owner still records its end event.
	ss := sessions.NewSessions(e.client)
	_, err = ss.Begin(c, &sessions.SessionBeginRequest{AccountID: alice, SessionID: "s1", RunID: id, Question: "q"})
	wantCode(t, err, "")
	_, err = ss.Save(c, &sessions.SessionSaveRequest{AccountID: alice, SessionID: "s1", Messages: json.RawMessage(`[]`), Turn: sessions.Turn{RunID: id, Question: "q", Finish: "stop"}})
	wantCode(t, err, "")
	wantCode(t, record("c", runs.RecordRequest{Events: []runs.Event{ev(5)}}), "")
	if claim("d") {
		t.Fatal("a done run was claimed")
	}
	evs, err = rs.Events(c, &runs.EventsRequest{RunID: id, AccountID: alice})
	wantCode(t, err, "")
	if evs.State != runs.StateDone || len(evs.Events) != 5 {
		t.Fatalf("the done run reads as %+v", evs)
	}
	// Cancelling a paused run wakes it, cancelled.
	id2 := uuid.NewString()
	_, err = rs.Create(c, &runs.CreateRequest{RunID: id2, AccountID: alice, SessionID: "s2", Request: json.RawMessage(`{}`), Owner: "a", LeaseMS: 60000})
	wantCode(t, err, "")
	_, err = rs.Record(c, &runs.RecordRequest{RunID: id2, Owner: "a", LeaseMS: 60000, Approval: approval})
	wantCode(t, err, "")
	_, err = rs.Cancel(c, &runs.CancelRequest{RunID: id2, AccountID: bob})
	wantCode(t, err, wire.NotFound)
	_, err = rs.Cancel(c, &runs.CancelRequest{RunID: id2, AccountID: alice})
	wantCode(t, err, "")
	resp, err = rs.Claim(c, &runs.ClaimRequest{RunID: id2, Owner: "b", LeaseMS: 60000})
	wantCode(t, err, "")
	if !resp.Claimed || !resp.Run.Cancelled {
		t.Fatalf("the cancelled paused run claims as %+v", resp)
	}
}
