package vfssvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"

	"github.com/mirobody/mirobody-go/services/vfs/tasks"
	"github.com/mirobody/mirobody-go/services/wire"
)

// taskIDPattern keeps task ids (minted by the gateway, echoed by clients)
// short and safe in logs.
var taskIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{16,128}$`)

// maxTaskTTLMs bounds how long a task is kept: a day.
const maxTaskTTLMs = 24 * 60 * 60 * 1000

const taskCols = `id, account_id, principal, tool, call_id, status, message, result, error, created, updated, ttl_ms, call, input_requests, answers`

func (s *Service) registerTasks(svc *wire.Service) error {
	return errors.Join(
		wire.Serve(svc, tasks.Create, s.createTask),
		wire.Serve(svc, tasks.Get, s.getTask),
		wire.Serve(svc, tasks.Finish, s.finishTask),
		wire.Serve(svc, tasks.Cancel, s.cancelTask),
		wire.Serve(svc, tasks.Update, s.updateTask),
	)
}

func checkTaskID(id string) error {
	if !taskIDPattern.MatchString(id) {
		return wire.Errorf(wire.InvalidArgument, "task id must be 16 to 128 letters, digits, '-' or '_'")
	}
	return nil
}

func scanTask(row pgx.Row, t *tasks.Task) error {
	return row.Scan(&t.ID, &t.AccountID, &t.Principal, &t.Tool, &t.CallID, &t.Status, &t.Message, &t.Result, &t.Error, &t.Created, &t.Updated, &t.TTLMs,
		&t.Call, &t.InputRequests, &t.Answers)
}

// notFound is the answer for an unknown, expired or foreign task alike.
func notFound(id string) error { return wire.Errorf(wire.NotFound, "unknown task %q", id) }

// createTask stores a working task. Expired tasks are deleted here, a few
// at a time, so the table needs no sweeper of its own.
func (s *Service) createTask(ctx context.Context, req *tasks.CreateRequest) (*tasks.Task, error) {
	if err := checkTaskID(req.ID); err != nil {
		return nil, err
	}
	if req.Tool == "" || req.CallID == "" {
		return nil, wire.Errorf(wire.InvalidArgument, "a task needs a tool and a call id")
	}
	if req.TTLMs <= 0 || req.TTLMs > maxTaskTTLMs {
		return nil, wire.Errorf(wire.InvalidArgument, "task ttl must be between 1 ms and a day")
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM mcp_tasks WHERE id IN (SELECT id FROM mcp_tasks WHERE expires_at < now() LIMIT 100)`); err != nil {
		return nil, fmt.Errorf("deleting expired tasks: %w", err)
	}
	var t tasks.Task
	err := scanTask(s.pool.QueryRow(ctx, `
		INSERT INTO mcp_tasks (id, account_id, principal, tool, call_id, status, ttl_ms, expires_at, call)
		VALUES ($1, $2, $3, $4, $5, $6, $7, now() + $7::bigint * interval '1 millisecond', $8)
		ON CONFLICT (id) DO NOTHING
		RETURNING `+taskCols, req.ID, req.AccountID, req.Principal, req.Tool, req.CallID, tasks.StatusWorking, req.TTLMs, nullJSON(req.Call)), &t)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, wire.Errorf(wire.AlreadyExists, "task id %q is taken", req.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("inserting task: %w", err)
	}
	return &t, nil
}

// getTask reads a live task of the account.
func (s *Service) getTask(ctx context.Context, req *tasks.GetRequest) (*tasks.Task, error) {
	if err := checkTaskID(req.ID); err != nil {
		return nil, notFound(req.ID)
	}
	var t tasks.Task
	err := scanTask(s.pool.QueryRow(ctx, `SELECT `+taskCols+` FROM mcp_tasks
		WHERE id = $1 AND account_id = $2 AND expires_at > now()`, req.ID, req.AccountID), &t)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound(req.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("reading task: %w", err)
	}
	return &t, nil
}

// finishTask records the end of a working task's run; any other state
// wins (a cancel that came first stays a cancel).
func (s *Service) finishTask(ctx context.Context, req *tasks.FinishRequest) (*tasks.Task, error) {
	switch {
	case req.Status == tasks.StatusCompleted && len(req.Result) > 0 && len(req.Error) == 0 && len(req.InputRequests) == 0:
	case req.Status == tasks.StatusFailed && len(req.Error) > 0 && len(req.Result) == 0 && len(req.InputRequests) == 0:
	case req.Status == tasks.StatusInputRequired && len(req.InputRequests) > 0 && len(req.Result) == 0 && len(req.Error) == 0:
	default:
		return nil, wire.Errorf(wire.InvalidArgument, "a task finishes completed with a result, failed with an error, or input_required with its questions")
	}
	var (
		t                tasks.Task
		requests, answer any
	)
	if req.Status == tasks.StatusInputRequired {
		requests, answer = req.InputRequests, req.Answers
	}
	err := scanTask(s.pool.QueryRow(ctx, `
		UPDATE mcp_tasks SET status = $3, message = $4, result = $5, error = $6, input_requests = $8, answers = $9, updated = now()
		WHERE id = $1 AND account_id = $2 AND status = $7 AND expires_at > now()
		RETURNING `+taskCols, req.ID, req.AccountID, req.Status, req.Message, nullJSON(req.Result), nullJSON(req.Error), tasks.StatusWorking,
		requests, answer), &t)
	if errors.Is(err, pgx.ErrNoRows) {
		return s.getTask(ctx, &tasks.GetRequest{ID: req.ID, AccountID: req.AccountID})
	}
	if err != nil {
		return nil, fmt.Errorf("finishing task: %w", err)
	}
	return &t, nil
}

// cancelTask moves a working task to cancelled, and leaves a terminal one.
func (s *Service) cancelTask(ctx context.Context, req *tasks.CancelRequest) (*tasks.CancelResponse, error) {
	if err := checkTaskID(req.ID); err != nil {
		return nil, notFound(req.ID)
	}
	var out tasks.CancelResponse
	err := scanTask(s.pool.QueryRow(ctx, `
		UPDATE mcp_tasks SET status = $3, message = $4, input_requests = NULL, updated = now()
		WHERE id = $1 AND account_id = $2 AND status IN ($5, $6) AND expires_at > now()
		RETURNING `+taskCols, req.ID, req.AccountID, tasks.StatusCancelled, req.Reason, tasks.StatusWorking, tasks.StatusInputRequired), &out.Task)
	if errors.Is(err, pgx.ErrNoRows) {
		t, err := s.getTask(ctx, &tasks.GetRequest{ID: req.ID, AccountID: req.AccountID})
		if err != nil {
			return nil, err
		}
		return &tasks.CancelResponse{Task: *t}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cancelling task: %w", err)
	}
	out.Cancelled = true
	return &out, nil
}

// updateTask records answers to an input_required task's pending
// questions, in one transaction so that concurrent partial updates both
// count and exactly one of them resumes the task.
func (s *Service) updateTask(ctx context.Context, req *tasks.UpdateRequest) (*tasks.UpdateResponse, error) {
	if err := checkTaskID(req.ID); err != nil {
		return nil, notFound(req.ID)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("beginning task update: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var t tasks.Task
	err = scanTask(tx.QueryRow(ctx, `SELECT `+taskCols+` FROM mcp_tasks
		WHERE id = $1 AND account_id = $2 AND expires_at > now() FOR UPDATE`, req.ID, req.AccountID), &t)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound(req.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("reading task: %w", err)
	}
	answered := false
	for k, v := range req.Responses {
		if _, ok := t.InputRequests[k]; !ok || t.Status != tasks.StatusInputRequired {
			continue
		}
		if t.Answers == nil {
			t.Answers = map[string]json.RawMessage{}
		}
		t.Answers[k] = v
		delete(t.InputRequests, k)
		answered = true
	}
	if !answered {
		return &tasks.UpdateResponse{Task: t}, nil
	}
	resumed := len(t.InputRequests) == 0
	var pending any = t.InputRequests
	status := tasks.StatusInputRequired
	if resumed {
		pending, status = nil, tasks.StatusWorking
	}
	err = scanTask(tx.QueryRow(ctx, `
		UPDATE mcp_tasks SET status = $2, input_requests = $3, answers = $4, updated = now()
		WHERE id = $1 RETURNING `+taskCols, t.ID, status, pending, t.Answers), &t)
	if err != nil {
		return nil, fmt.Errorf("updating task: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("committing task update: %w", err)
	}
	return &tasks.UpdateResponse{Task: t, Resumed: resumed}, nil
}

// nullJSON is raw as a jsonb parameter: SQL NULL when empty.
func nullJSON(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}
