package vfssvc

import (
	"encoding/json"
	"testing"

	"github.com/mirobody/mirobody-go/services/vfs/tasks"
	"github.com/mirobody/mirobody-go/services/wire"
)

// TestTasks: a task is its owner's alone (another account and an anonymous
// caller get not_found), finishes once, and a cancel wins over a later
// finish and is idempotent.
func TestTasks(t *testing.T) {
	e := start(t, nil)
	c := ctx(t)
	tc := tasks.NewClient(e.client)
	owner, other := e.account(t), e.account(t)

	create := func(id, account string) *tasks.Task {
		t.Helper()
		task, err := tc.Create(c, &tasks.CreateRequest{ID: id, AccountID: account, Principal: "key-1", Tool: "slow", CallID: "call-" + id, TTLMs: 60_000})
		wantCode(t, err, "")
		return task
	}
	a := create("task-aaaaaaaaaaaaaaaa", owner)
	if a.Status != tasks.StatusWorking || a.Created.IsZero() || a.TTLMs != 60_000 || a.AccountID != owner {
		t.Fatalf("created: %+v", a)
	}
	_, err := tc.Create(c, &tasks.CreateRequest{ID: a.ID, AccountID: other, Tool: "slow", CallID: "x", TTLMs: 1000})
	wantCode(t, err, wire.AlreadyExists)
	for _, bad := range []*tasks.CreateRequest{
		{ID: "short", Tool: "t", CallID: "c", TTLMs: 1000},
		{ID: "task-bbbbbbbbbbbbbbbb", CallID: "c", TTLMs: 1000},
		{ID: "task-bbbbbbbbbbbbbbbb", Tool: "t", CallID: "c"},
		{ID: "task-bbbbbbbbbbbbbbbb", Tool: "t", CallID: "c", TTLMs: maxTaskTTLMs + 1},
	} {
		_, err := tc.Create(c, bad)
		wantCode(t, err, wire.InvalidArgument)
	}

	for _, tt := range []struct {
		name, account string
		code          wire.Code
	}{
		{"owner", owner, ""},
		{"other account", other, wire.NotFound},
		{"anonymous", "", wire.NotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tc.Get(c, &tasks.GetRequest{ID: a.ID, AccountID: tt.account})
			wantCode(t, err, tt.code)
			_, err = tc.Cancel(c, &tasks.CancelRequest{ID: a.ID, AccountID: tt.account})
			if tt.code != "" {
				wantCode(t, err, tt.code)
			}
		})
	}
	// The owner's cancel above moved it; another cancel is an ack only.
	got, err := tc.Get(c, &tasks.GetRequest{ID: a.ID, AccountID: owner})
	wantCode(t, err, "")
	if got.Status != tasks.StatusCancelled {
		t.Fatalf("after cancel: %+v", got)
	}
	again, err := tc.Cancel(c, &tasks.CancelRequest{ID: a.ID, AccountID: owner})
	wantCode(t, err, "")
	if again.Cancelled || again.Task.Status != tasks.StatusCancelled {
		t.Fatalf("second cancel: %+v", again)
	}
	late, err := tc.Finish(c, &tasks.FinishRequest{ID: a.ID, AccountID: owner, Status: tasks.StatusCompleted, Result: json.RawMessage(`{"content":[]}`)})
	wantCode(t, err, "")
	if late.Status != tasks.StatusCancelled || late.Result != nil {
		t.Fatalf("finish after cancel: %+v", late)
	}

	b := create("task-cccccccccccccccc", "")
	_, err = tc.Finish(c, &tasks.FinishRequest{ID: b.ID, Status: tasks.StatusCompleted})
	wantCode(t, err, wire.InvalidArgument)
	done, err := tc.Finish(c, &tasks.FinishRequest{ID: b.ID, Status: tasks.StatusFailed, Error: json.RawMessage(`{"code":-32603,"message":"boom"}`)})
	wantCode(t, err, "")
	if done.Status != tasks.StatusFailed || string(done.Error) == "" {
		t.Fatalf("failed: %+v", done)
	}
	_, err = tc.Get(c, &tasks.GetRequest{ID: b.ID, AccountID: owner})
	wantCode(t, err, wire.NotFound)
	ack, err := tc.Cancel(c, &tasks.CancelRequest{ID: b.ID})
	wantCode(t, err, "")
	if ack.Cancelled || ack.Task.Status != tasks.StatusFailed {
		t.Fatalf("cancel of a failed task: %+v", ack)
	}

	// An expired task is gone for everyone.
	x := create("task-dddddddddddddddd", owner)
	if _, err := e.pool.Exec(c, `UPDATE mcp_tasks SET expires_at = now() - interval '1 second' WHERE id = $1`, x.ID); err != nil {
		t.Fatal(err)
	}
	_, err = tc.Get(c, &tasks.GetRequest{ID: x.ID, AccountID: owner})
	wantCode(t, err, wire.NotFound)
}

// TestTaskInput: a run that asks parks the task input_required with its
// questions; partial answers keep it there, the last one resumes it once,
// and another account's update finds nothing.
func TestTaskInput(t *testing.T) {
	e := start(t, nil)
	c := ctx(t)
	tc := tasks.NewClient(e.client)
	owner, other := e.account(t), e.account(t)
	id := "task-inputinputinput"
	_, err := tc.Create(c, &tasks.CreateRequest{ID: id, AccountID: owner, Tool: "ask", CallID: "call-1", TTLMs: 60_000,
		Call: json.RawMessage(`{"name":"ask"}`)})
	wantCode(t, err, "")
	q := json.RawMessage(`{"method":"elicitation/create"}`)
	parked, err := tc.Finish(c, &tasks.FinishRequest{ID: id, AccountID: owner, Status: tasks.StatusInputRequired,
		InputRequests: map[string]json.RawMessage{"a": q, "b": q}})
	wantCode(t, err, "")
	if parked.Status != tasks.StatusInputRequired || len(parked.InputRequests) != 2 || parked.Terminal() || string(parked.Call) != `{"name":"ask"}` {
		t.Fatalf("parked: %+v", parked)
	}
	answer := json.RawMessage(`{"action":"accept"}`)
	_, err = tc.Update(c, &tasks.UpdateRequest{ID: id, AccountID: other, Responses: map[string]json.RawMessage{"a": answer}})
	wantCode(t, err, wire.NotFound)
	steps := []struct {
		key     string
		resumed bool
		status  string
		pending int
	}{
		{"unknown", false, tasks.StatusInputRequired, 2},
		{"a", false, tasks.StatusInputRequired, 1},
		{"b", true, tasks.StatusWorking, 0},
		{"b", false, tasks.StatusWorking, 0},
	}
	for _, s := range steps {
		u, err := tc.Update(c, &tasks.UpdateRequest{ID: id, AccountID: owner, Responses: map[string]json.RawMessage{s.key: answer}})
		wantCode(t, err, "")
		if u.Resumed != s.resumed || u.Task.Status != s.status || len(u.Task.InputRequests) != s.pending {
			t.Errorf("update %s: %+v", s.key, u)
		}
	}
	done, err := tc.Finish(c, &tasks.FinishRequest{ID: id, AccountID: owner, Status: tasks.StatusCompleted, Result: json.RawMessage(`{"content":[]}`)})
	wantCode(t, err, "")
	if done.Status != tasks.StatusCompleted || len(done.InputRequests) != 0 {
		t.Errorf("finished: %+v", done)
	}
}
