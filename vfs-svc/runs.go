package vfssvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/mirobody/mirobody-go/services/vfs/runs"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Durable runs (agent-svc/design.md "Durable runs"): the owner's lease is
// a fencing token, so a replica that lost a run (its lease expired and
// another replica claimed it) can no longer record anything for it.

func (s *Service) registerRuns(svc *wire.Service) error {
	return errors.Join(
		wire.Serve(svc, runs.Create, s.createRun),
		wire.Serve(svc, runs.Record, s.recordRun),
		wire.Serve(svc, runs.Claim, s.claimRun),
		wire.Serve(svc, runs.Events, s.runEvents),
		wire.Serve(svc, runs.Decide, s.decideRun),
		wire.Serve(svc, runs.Cancel, s.cancelRun),
	)
}

// maxRunEvents bounds the events one Events answer holds.
const maxRunEvents = 1000

const runCols = `id, account_id, session_id, state, request, owner, takeovers, checkpoint, last_seq, approval, decision, cancelled,
	(extract(epoch from now() - created) * 1000)::bigint`

func scanRun(row pgx.Row) (*runs.Run, error) {
	var r runs.Run
	var account uuid.UUID
	var request, checkpoint, approval, decision []byte
	if err := row.Scan(&r.ID, &account, &r.SessionID, &r.State, &request, &r.Owner, &r.Takeovers, &checkpoint, &r.LastSeq,
		&approval, &decision, &r.Cancelled, &r.AgeMS); err != nil {
		return nil, err
	}
	r.AccountID = account.String()
	r.Request = request
	r.Checkpoint = checkpoint
	if approval != nil {
		r.Approval = &runs.Approval{}
		if err := json.Unmarshal(approval, r.Approval); err != nil {
			return nil, fmt.Errorf("decoding approval: %w", err)
		}
	}
	if decision != nil {
		r.Decision = &runs.Decision{}
		if err := json.Unmarshal(decision, r.Decision); err != nil {
			return nil, fmt.Errorf("decoding decision: %w", err)
		}
	}
	return &r, nil
}

// checkRun checks an account id and a run id (which has a session id's shape).
func checkRun(account, id string) error {
	if _, err := uuid.Parse(account); err != nil {
		return wire.Errorf(wire.InvalidArgument, "account id %q is not a UUID", account)
	}
	if sessions.CheckID(id) != nil {
		return wire.Errorf(wire.InvalidArgument, "run id %q is malformed", id)
	}
	return nil
}

func (s *Service) createRun(ctx context.Context, req *runs.CreateRequest) (*runs.Run, error) {
	if err := checkSessionIDs(req.AccountID, req.SessionID); err != nil {
		return nil, err
	}
	if err := checkRun(req.AccountID, req.RunID); err != nil {
		return nil, err
	}
	if req.Owner == "" || req.LeaseMS <= 0 || !json.Valid(req.Request) {
		return nil, wire.Errorf(wire.InvalidArgument, "owner, lease_ms and a JSON request are required")
	}
	// The same create sent again (its owner token is fresh per run)
	// answers the run it created: runs.Create is idempotent.
	r, err := scanRun(s.pool.QueryRow(ctx, `INSERT INTO runs (id, account_id, session_id, state, request, owner, lease_until)
		VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7::float8 / 1000))
		ON CONFLICT (id) DO UPDATE SET updated = runs.updated WHERE runs.owner = EXCLUDED.owner AND runs.account_id = EXCLUDED.account_id
		RETURNING `+runCols,
		req.RunID, req.AccountID, req.SessionID, runs.StateRunning, []byte(req.Request), req.Owner, req.LeaseMS))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, wire.Errorf(wire.AlreadyExists, "run %s exists", req.RunID)
	}
	if err != nil {
		return nil, fmt.Errorf("creating run: %w", err)
	}
	return r, nil
}

func (s *Service) recordRun(ctx context.Context, req *runs.RecordRequest) (*runs.RecordResponse, error) {
	if req.RunID == "" || req.Owner == "" {
		return nil, wire.Errorf(wire.InvalidArgument, "run id and owner are required")
	}
	var approval []byte
	if req.Approval != nil {
		approval, _ = json.Marshal(req.Approval)
	}
	var checkpoint []byte
	if len(req.Checkpoint) > 0 {
		if !json.Valid(req.Checkpoint) {
			return nil, wire.Errorf(wire.InvalidArgument, "the checkpoint is not JSON")
		}
		checkpoint = req.Checkpoint
	}
	var last int64
	for _, ev := range req.Events {
		if ev.Seq <= 0 || !json.Valid(ev.Data) {
			return nil, wire.Errorf(wire.InvalidArgument, "events need a positive seq and JSON data")
		}
		last = max(last, ev.Seq)
	}
	var out runs.RecordResponse
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `UPDATE runs SET
				lease_until = now() + make_interval(secs => $3::float8 / 1000),
				checkpoint = COALESCE($4, checkpoint),
				last_seq = GREATEST(last_seq, $5),
				state = CASE WHEN $6::jsonb IS NULL THEN state ELSE 'paused' END,
				owner = CASE WHEN $6::jsonb IS NULL THEN owner ELSE '' END,
				approval = COALESCE($6, approval),
				decision = CASE WHEN $7 THEN NULL ELSE decision END,
				updated = now()
			WHERE id = $1 AND owner = $2 AND state <> 'paused' RETURNING cancelled`,
			req.RunID, req.Owner, req.LeaseMS, checkpoint, last, approval, req.TakeDecision).Scan(&out.Cancelled)
		if errors.Is(err, pgx.ErrNoRows) && req.Approval != nil {
			err = pausedAgain(ctx, tx, req, &out)
		}
		if errors.Is(err, pgx.ErrNoRows) {
			return wire.Errorf(wire.FailedPrecondition, "run %s is not owned by this replica any more", req.RunID)
		}
		if err != nil {
			return fmt.Errorf("renewing run: %w", err)
		}
		for _, ev := range req.Events {
			if _, err := tx.Exec(ctx, `INSERT INTO run_events (run_id, seq, event) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
				req.RunID, ev.Seq, []byte(ev.Data)); err != nil {
				return fmt.Errorf("appending run event: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// pausedAgain answers a pausing record sent again after its reply was lost
// (runs.Record is idempotent): the run is still paused on the same call,
// and the owner gave it up with the first one. Its events are appended
// again, which ON CONFLICT leaves as they were. It returns pgx.ErrNoRows
// when the run is not paused on that call.
func pausedAgain(ctx context.Context, tx pgx.Tx, req *runs.RecordRequest, out *runs.RecordResponse) error {
	return tx.QueryRow(ctx, `SELECT cancelled FROM runs WHERE id = $1 AND state = 'paused' AND owner = '' AND approval->>'tool_call_id' = $2`,
		req.RunID, req.Approval.ToolCallID).Scan(&out.Cancelled)
}

func (s *Service) claimRun(ctx context.Context, req *runs.ClaimRequest) (*runs.ClaimResponse, error) {
	if req.Owner == "" || req.LeaseMS <= 0 {
		return nil, wire.Errorf(wire.InvalidArgument, "owner and lease_ms are required")
	}
	// The first owner's lease ends without a claim when it created the
	// run; every claim after that is a takeover. A run the same owner token
	// (fresh per claim) holds was claimed by this request sent again after
	// its reply was lost (runs.Claim is idempotent): it is answered again,
	// not counted twice.
	row := s.pool.QueryRow(ctx, `UPDATE runs SET owner = $1, lease_until = now() + make_interval(secs => $2::float8 / 1000),
			takeovers = takeovers + CASE WHEN owner = $1 THEN 0 ELSE 1 END, updated = now()
		WHERE id = (SELECT id FROM runs WHERE state = 'running' AND (owner = $1 OR lease_until < now() AND ($3 = '' OR id = $3))
			ORDER BY owner = $1 DESC, lease_until LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING `+runCols, req.Owner, req.LeaseMS, req.RunID)
	r, err := scanRun(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return &runs.ClaimResponse{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claiming run: %w", err)
	}
	return &runs.ClaimResponse{Claimed: true, Run: *r}, nil
}

func (s *Service) runEvents(ctx context.Context, req *runs.EventsRequest) (*runs.EventsResponse, error) {
	if err := checkRun(req.AccountID, req.RunID); err != nil {
		return nil, err
	}
	out := runs.EventsResponse{Events: []runs.Event{}}
	var approval []byte
	err := s.pool.QueryRow(ctx, `SELECT state, approval FROM runs WHERE id = $1 AND account_id = $2`, req.RunID, req.AccountID).Scan(&out.State, &approval)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, wire.Errorf(wire.NotFound, "no run %s", req.RunID)
	}
	if err != nil {
		return nil, fmt.Errorf("reading run: %w", err)
	}
	if approval != nil && out.State == runs.StatePaused {
		out.Approval = &runs.Approval{}
		if err := json.Unmarshal(approval, out.Approval); err != nil {
			return nil, fmt.Errorf("decoding approval: %w", err)
		}
	}
	rows, err := s.pool.Query(ctx, `SELECT seq, event FROM run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, req.RunID, req.After, maxRunEvents+1)
	if err != nil {
		return nil, fmt.Errorf("reading run events: %w", err)
	}
	evs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (runs.Event, error) {
		var ev runs.Event
		var data []byte
		err := row.Scan(&ev.Seq, &data)
		ev.Data = data
		return ev, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading run events: %w", err)
	}
	if len(evs) > maxRunEvents {
		evs, out.More = evs[:maxRunEvents], true
	}
	out.Events = append(out.Events, evs...)
	return &out, nil
}

// decideRun records the user's answer to a paused run's approval and
// makes the run claimable at once.
func (s *Service) decideRun(ctx context.Context, req *runs.DecideRequest) (*runs.Run, error) {
	if err := checkRun(req.AccountID, req.RunID); err != nil {
		return nil, err
	}
	switch req.Decision.Decision {
	case runs.DecisionApprove, runs.DecisionReject:
	case runs.DecisionEdit:
		var args map[string]any
		if json.Unmarshal(req.Decision.Arguments, &args) != nil {
			return nil, wire.Errorf(wire.InvalidArgument, "edit needs arguments, a JSON object")
		}
	case runs.DecisionAnswer:
		var a struct {
			Action  string         `json:"action"`
			Content map[string]any `json:"content"`
		}
		if json.Unmarshal(req.Decision.Answer, &a) != nil || !slices.Contains([]string{"accept", "decline", "cancel"}, a.Action) {
			return nil, wire.Errorf(wire.InvalidArgument, "answer needs an action (accept, decline or cancel) and an object as content")
		}
	default:
		return nil, wire.Errorf(wire.InvalidArgument, "decision must be approve, edit, reject or answer")
	}
	decision, _ := json.Marshal(req.Decision)
	// A question is answered, an approval decided, never the other way.
	r, err := scanRun(s.pool.QueryRow(ctx, `UPDATE runs SET state = 'running', decision = $3, approval = NULL, lease_until = now(), updated = now()
		WHERE id = $1 AND account_id = $2 AND state = 'paused' AND approval->>'tool_call_id' = $4 AND (approval->'ask' IS NOT NULL) = $5 RETURNING `+runCols,
		req.RunID, req.AccountID, decision, req.Decision.ToolCallID, req.Decision.Decision == runs.DecisionAnswer))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, wire.Errorf(wire.FailedPrecondition, "run %s is not waiting for an approval of call %q", req.RunID, req.Decision.ToolCallID)
	}
	if err != nil {
		return nil, fmt.Errorf("deciding run: %w", err)
	}
	return r, nil
}

// cancelRun marks a run cancelled; a paused run becomes claimable, so a
// replica ends it and saves its turn.
func (s *Service) cancelRun(ctx context.Context, req *runs.CancelRequest) (*runs.Run, error) {
	if err := checkRun(req.AccountID, req.RunID); err != nil {
		return nil, err
	}
	r, err := scanRun(s.pool.QueryRow(ctx, `UPDATE runs SET cancelled = true, updated = now(),
			lease_until = CASE WHEN state = 'paused' THEN now() ELSE lease_until END,
			state = CASE WHEN state = 'paused' THEN 'running' ELSE state END
		WHERE id = $1 AND account_id = $2 RETURNING `+runCols, req.RunID, req.AccountID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, wire.Errorf(wire.NotFound, "no run %s", req.RunID)
	}
	if err != nil {
		return nil, fmt.Errorf("cancelling run: %w", err)
	}
	return r, nil
}

// endRun marks a run done once its turn is in the session, in the same
// transaction, so that nobody resumes a run whose turn is saved.
func endRun(ctx context.Context, tx pgx.Tx, runID, account string) error {
	if _, err := tx.Exec(ctx, `UPDATE runs SET state = 'done', approval = NULL, updated = now() WHERE id = $1 AND account_id = $2`, runID, account); err != nil {
		return fmt.Errorf("ending run: %w", err)
	}
	return nil
}
