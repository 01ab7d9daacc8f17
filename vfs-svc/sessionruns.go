package vfssvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	"github.com/mirobody/mirobody-go/services/wire"
)

// beginTurn records a run's question as a turn in progress, so that the
// session exists (and shows the question) from the run's first event on,
// before any of its tool calls writes a file.
func (s *Service) beginTurn(ctx context.Context, req *sessions.SessionBeginRequest) (*sessions.Session, error) {
	if err := checkSessionIDs(req.AccountID, req.SessionID); err != nil {
		return nil, err
	}
	if req.SessionID == "" || req.RunID == "" {
		return nil, wire.Errorf(wire.InvalidArgument, "session id and run id are required")
	}
	var out sessions.Session
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// As in saveSession, a session of another account is never touched.
		// The same begin sent again (sessions.Begin is idempotent) finds its
		// turn and leaves the session as the first one did.
		err := scanSession(tx.QueryRow(ctx, `
			INSERT INTO sessions (id, account_id, title, agent) VALUES ($1, $2, $3, $4)
			ON CONFLICT (id) DO UPDATE SET updated = CASE
				WHEN EXISTS (SELECT 1 FROM session_turns t WHERE t.session_id = sessions.id AND t.run_id = $5) THEN sessions.updated
				ELSE now() END
			WHERE sessions.account_id = EXCLUDED.account_id
			RETURNING `+sessionCols, req.SessionID, req.AccountID, truncateTitle(req.Title), req.Agent, req.RunID), &out)
		if errors.Is(err, pgx.ErrNoRows) {
			return wire.Errorf(wire.AlreadyExists, "session id %q is already taken; omit session_id to start a new session", req.SessionID)
		}
		if err != nil {
			return fmt.Errorf("upserting session: %w", err)
		}
		var seq int
		err = tx.QueryRow(ctx, `SELECT seq FROM session_turns WHERE session_id = $1 AND run_id = $2`, req.SessionID, req.RunID).Scan(&seq)
		if err == nil {
			return nil // sent again
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("reading turn: %w", err)
		}
		if err := scanSession(tx.QueryRow(ctx, `UPDATE sessions SET turns = turns + 1 WHERE id = $1 RETURNING `+sessionCols, req.SessionID), &out); err != nil {
			return fmt.Errorf("counting turn: %w", err)
		}
		_, err = tx.Exec(ctx, `INSERT INTO session_turns (session_id, seq, question, answer, finish, run_id) VALUES ($1, $2, $3, '', $4, $5)`,
			req.SessionID, out.Turns, req.Question, sessions.FinishRunning, req.RunID)
		if err != nil {
			return fmt.Errorf("inserting turn: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// completeTurn saves a finished run into the turn recorded for it (by
// beginTurn, or by an earlier save of the run); done is false when there is
// none (the caller appends a turn). The run's own save wins over a failure
// someone else recorded meanwhile: it knows how the turn really ended. A
// save the turn already holds is the same request sent again after its
// reply was lost (sessions.Save is idempotent): it changes nothing and
// answers the session as the first one left it.
func (s *Service) completeTurn(ctx context.Context, tx pgx.Tx, req *sessions.SessionSaveRequest, events json.RawMessage, out *sessions.Session) (done bool, err error) {
	var seq int
	var saved bool
	err = tx.QueryRow(ctx, `SELECT t.seq, t.answer = $4 AND t.finish = $5 AND t.error = $6 AND t.events = $7::jsonb
		FROM session_turns t JOIN sessions s ON s.id = t.session_id
		WHERE t.session_id = $1 AND t.run_id = $2 AND s.account_id = $3 FOR UPDATE OF t`,
		req.SessionID, req.Turn.RunID, req.AccountID, req.Turn.Answer, req.Turn.Finish, req.Turn.Error, []byte(events)).Scan(&seq, &saved)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading turn: %w", err)
	}
	if saved {
		if err := scanSession(tx.QueryRow(ctx, `SELECT `+sessionCols+` FROM sessions WHERE id = $1`, req.SessionID), out); err != nil {
			return false, fmt.Errorf("reading session: %w", err)
		}
		return true, nil
	}
	if err := scanSession(tx.QueryRow(ctx, `UPDATE sessions SET messages = $3, agent = $4, updated = now() WHERE id = $1 AND account_id = $2 RETURNING `+sessionCols,
		req.SessionID, req.AccountID, []byte(req.Messages), req.Agent), out); err != nil {
		return false, fmt.Errorf("updating session: %w", err)
	}
	_, err = tx.Exec(ctx, `UPDATE session_turns SET answer = $3, finish = $4, events = $5, error = $6 WHERE session_id = $1 AND seq = $2`,
		req.SessionID, seq, req.Turn.Answer, req.Turn.Finish, []byte(events), req.Turn.Error)
	if err != nil {
		return false, fmt.Errorf("completing turn: %w", err)
	}
	return true, endRun(ctx, tx, req.Turn.RunID, req.AccountID)
}

// failTurn marks a run's turn failed if it is still in progress.
func (s *Service) failTurn(ctx context.Context, req *sessions.SessionFailRequest) (*sessions.SessionFailResponse, error) {
	if err := checkSessionIDs(req.AccountID, req.SessionID); err != nil {
		return nil, err
	}
	if req.SessionID == "" || req.RunID == "" {
		return nil, wire.Errorf(wire.InvalidArgument, "session id and run id are required")
	}
	if req.Finish == "" || req.Finish == sessions.FinishRunning {
		return nil, wire.Errorf(wire.InvalidArgument, "finish_reason must say how the turn ended")
	}
	var out sessions.SessionFailResponse
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// A turn that already holds this very failure was marked by the
		// first try of this request (sessions.Fail is idempotent): it
		// answers marked again, as the first try did.
		err := tx.QueryRow(ctx, `UPDATE session_turns t SET finish = $4, error = $5 FROM sessions s
			WHERE s.id = t.session_id AND s.account_id = $2 AND t.session_id = $1 AND t.run_id = $3
				AND (t.finish = $6 OR t.finish = $4 AND t.error = $5 AND t.answer = '' AND t.events = '[]')
			RETURNING true`,
			req.SessionID, req.AccountID, req.RunID, req.Finish, req.Error, sessions.FinishRunning).Scan(&out.Marked)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("marking turn failed: %w", err)
		}
		// The run ends either way: a turn no longer running has nothing
		// left for a replica to resume.
		return endRun(ctx, tx, req.RunID, req.AccountID)
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}
