package vfssvc

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	"github.com/mirobody/mirobody-go/services/wire"
)

func (s *Service) registerSessions(svc *wire.Service) error {
	return errors.Join(
		wire.Serve(svc, sessions.Load, s.loadSession),
		wire.Serve(svc, sessions.Save, s.saveSession),
		wire.Serve(svc, sessions.List, s.listSessions),
		wire.Serve(svc, sessions.Get, s.getSession),
		wire.Serve(svc, sessions.Delete, s.deleteSession),
		wire.Serve(svc, sessions.Rename, s.renameSession),
		wire.Serve(svc, sessions.Begin, s.beginTurn),
		wire.Serve(svc, sessions.Fail, s.failTurn),
	)
}

func checkSessionIDs(account, session string) error {
	if _, err := uuid.Parse(account); err != nil {
		return wire.Errorf(wire.InvalidArgument, "account id %q is not a UUID", account)
	}
	if session == "" {
		return nil
	}
	return sessions.CheckID(session)
}

const sessionCols = `id, title, agent, turns, created, updated`

func scanSession(row pgx.Row, out *sessions.Session) error {
	return row.Scan(&out.ID, &out.Title, &out.Agent, &out.Turns, &out.Created, &out.Updated)
}

func (s *Service) loadSession(ctx context.Context, req *sessions.SessionLoadRequest) (*sessions.SessionLoadResponse, error) {
	if err := checkSessionIDs(req.AccountID, req.SessionID); err != nil {
		return nil, err
	}
	var resp sessions.SessionLoadResponse
	var msgs []byte
	var mine bool
	// One row by id whoever owns it: a session id of another account is
	// refused here, before a turn runs, rather than when its save fails.
	// Only the owner's row carries its messages out of the database.
	err := s.pool.QueryRow(ctx, `SELECT `+sessionCols+`, CASE WHEN account_id = $2 THEN messages END, account_id = $2
		FROM sessions WHERE id = $1`,
		req.SessionID, req.AccountID).Scan(&resp.Session.ID, &resp.Session.Title, &resp.Session.Agent, &resp.Session.Turns,
		&resp.Session.Created, &resp.Session.Updated, &msgs, &mine)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, wire.Errorf(wire.NotFound, "no session %q", req.SessionID)
	}
	if err != nil {
		return nil, fmt.Errorf("loading session: %w", err)
	}
	if !mine {
		return nil, wire.Errorf(wire.AlreadyExists, "session id %q is already taken; omit session_id to start a new session", req.SessionID)
	}
	resp.Messages = msgs
	return &resp, nil
}

func (s *Service) saveSession(ctx context.Context, req *sessions.SessionSaveRequest) (*sessions.Session, error) {
	if err := checkSessionIDs(req.AccountID, req.SessionID); err != nil {
		return nil, err
	}
	if req.SessionID == "" || req.Turn.RunID == "" {
		return nil, wire.Errorf(wire.InvalidArgument, "session id and the turn's run id are required")
	}
	if len(req.Messages) == 0 || !json.Valid(req.Messages) {
		return nil, wire.Errorf(wire.InvalidArgument, "messages must be a JSON array")
	}
	events := req.Turn.Events
	if len(events) == 0 {
		events = json.RawMessage("[]")
	}
	var out sessions.Session
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		done, err := s.completeTurn(ctx, tx, req, events, &out)
		if done || err != nil {
			return err
		}
		// The upsert never moves a session between accounts: a conflicting
		// row of another account leaves the WHERE false and returns nothing.
		err = scanSession(tx.QueryRow(ctx, `
			INSERT INTO sessions (id, account_id, title, agent, messages, turns)
			VALUES ($1, $2, $3, $4, $5, 1)
			ON CONFLICT (id) DO UPDATE SET messages = EXCLUDED.messages, turns = sessions.turns + 1,
				agent = EXCLUDED.agent, updated = now()
			WHERE sessions.account_id = EXCLUDED.account_id
			RETURNING `+sessionCols, req.SessionID, req.AccountID, truncateTitle(req.Title), req.Agent, []byte(req.Messages)), &out)
		if errors.Is(err, pgx.ErrNoRows) {
			return wire.Errorf(wire.AlreadyExists, "session id %q is already taken; omit session_id to start a new session", req.SessionID)
		}
		if err != nil {
			return fmt.Errorf("upserting session: %w", err)
		}
		_, err = tx.Exec(ctx, `INSERT INTO session_turns (session_id, seq, question, answer, finish, events, run_id, error) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			req.SessionID, out.Turns, req.Turn.Question, req.Turn.Answer, req.Turn.Finish, []byte(events), req.Turn.RunID, req.Turn.Error)
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

// maxAutoTitle is the length, in characters, of a title made from the
// first question: a sidebar line, not the whole question.
const maxAutoTitle = 60

// truncateTitle makes a session's title from its first question: the first
// non-blank line, cut at a word boundary with an ellipsis when it is long.
func truncateTitle(t string) string {
	for line := range strings.Lines(t) {
		if line = strings.Join(strings.Fields(line), " "); line != "" {
			t = line
			break
		}
	}
	r := []rune(t)
	if len(r) <= maxAutoTitle {
		return t
	}
	cut := string(r[:maxAutoTitle])
	// A word cut in the middle is dropped, unless it is the only word.
	if i := strings.LastIndexByte(cut, ' '); i > maxAutoTitle/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,.;:-") + "…"
}

func (s *Service) renameSession(ctx context.Context, req *sessions.SessionRenameRequest) (*sessions.Session, error) {
	if err := checkSessionIDs(req.AccountID, req.SessionID); err != nil {
		return nil, err
	}
	title := strings.Join(strings.Fields(req.Title), " ")
	if n := utf8.RuneCountInString(title); n == 0 || n > sessions.MaxSessionTitle {
		return nil, wire.Errorf(wire.InvalidArgument, "title must be 1 to %d characters", sessions.MaxSessionTitle)
	}
	var out sessions.Session
	err := scanSession(s.pool.QueryRow(ctx, `UPDATE sessions SET title = $3 WHERE id = $1 AND account_id = $2 RETURNING `+sessionCols,
		req.SessionID, req.AccountID, title), &out)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, wire.Errorf(wire.NotFound, "no session %q", req.SessionID)
	}
	if err != nil {
		return nil, fmt.Errorf("renaming session: %w", err)
	}
	return &out, nil
}

type sessionCursor struct {
	Updated time.Time `json:"u"`
	ID      string    `json:"i"`
}

func (s *Service) listSessions(ctx context.Context, req *sessions.SessionListRequest) (*sessions.SessionListResponse, error) {
	if err := checkSessionIDs(req.AccountID, ""); err != nil {
		return nil, err
	}
	limit := req.Limit
	if limit <= 0 {
		limit = 20
	}
	limit = min(limit, 100)
	cur := sessionCursor{Updated: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}
	if req.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(req.Cursor)
		if err != nil || json.Unmarshal(raw, &cur) != nil {
			return nil, wire.Errorf(wire.InvalidArgument, "cursor is not valid")
		}
	}
	rows, err := s.pool.Query(ctx, `SELECT `+sessionCols+` FROM sessions WHERE account_id = $1 AND (updated, id) < ($2, $3)
		ORDER BY updated DESC, id DESC LIMIT $4`, req.AccountID, cur.Updated, cur.ID, limit+1)
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	defer rows.Close()
	resp := &sessions.SessionListResponse{Sessions: []sessions.Session{}}
	for rows.Next() {
		var ss sessions.Session
		if err := scanSession(rows, &ss); err != nil {
			return nil, fmt.Errorf("scanning session: %w", err)
		}
		resp.Sessions = append(resp.Sessions, ss)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	if len(resp.Sessions) > limit {
		resp.Sessions = resp.Sessions[:limit]
		last := resp.Sessions[limit-1]
		raw, _ := json.Marshal(sessionCursor{Updated: last.Updated, ID: last.ID})
		resp.NextCursor = base64.RawURLEncoding.EncodeToString(raw)
	}
	return resp, nil
}

func (s *Service) getSession(ctx context.Context, req *sessions.SessionGetRequest) (*sessions.SessionGetResponse, error) {
	if err := checkSessionIDs(req.AccountID, req.SessionID); err != nil {
		return nil, err
	}
	resp := &sessions.SessionGetResponse{Turns: []sessions.Turn{}}
	err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionCols+` FROM sessions WHERE id = $1 AND account_id = $2`,
		req.SessionID, req.AccountID), &resp.Session)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, wire.Errorf(wire.NotFound, "no session %q", req.SessionID)
	}
	if err != nil {
		return nil, fmt.Errorf("reading session: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT seq, question, answer, finish, run_id, error, events, created FROM session_turns WHERE session_id = $1 ORDER BY seq`, req.SessionID)
	if err != nil {
		return nil, fmt.Errorf("reading turns: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t sessions.Turn
		var ev []byte
		if err := rows.Scan(&t.Seq, &t.Question, &t.Answer, &t.Finish, &t.RunID, &t.Error, &ev, &t.Created); err != nil {
			return nil, fmt.Errorf("scanning turn: %w", err)
		}
		t.Events = ev
		resp.Turns = append(resp.Turns, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading turns: %w", err)
	}
	return resp, nil
}

func (s *Service) deleteSession(ctx context.Context, req *sessions.SessionDeleteRequest) (*sessions.SessionDeleteResponse, error) {
	if err := checkSessionIDs(req.AccountID, req.SessionID); err != nil {
		return nil, err
	}
	if req.SessionID == "" {
		return nil, wire.Errorf(wire.InvalidArgument, "session id is required")
	}
	resp := &sessions.SessionDeleteResponse{}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM sessions WHERE id = $1 AND account_id = $2`, req.SessionID, req.AccountID)
		if err != nil {
			return fmt.Errorf("deleting session: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return wire.Errorf(wire.NotFound, "no session %q", req.SessionID)
		}
		// Its runs (and their recorded events) go too: a run still going
		// is fenced off and stops at its next record.
		if _, err := tx.Exec(ctx, `DELETE FROM runs WHERE account_id = $1 AND session_id = $2`, req.AccountID, req.SessionID); err != nil {
			return fmt.Errorf("deleting the session's runs: %w", err)
		}
		// The session's files go too, and the account's usage row (locked
		// first, as every VFS write does) shrinks by their size.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM vfs_usage WHERE account_id = $1 FOR UPDATE`, req.AccountID); err != nil {
			return fmt.Errorf("locking usage: %w", err)
		}
		var n, bytes int64
		err = tx.QueryRow(ctx, `WITH d AS (DELETE FROM vfs_files WHERE account_id = $1 AND session_id = $2 RETURNING size)
			SELECT count(*), coalesce(sum(size), 0) FROM d`, req.AccountID, req.SessionID).Scan(&n, &bytes)
		if err != nil {
			return fmt.Errorf("deleting session files: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE vfs_usage SET bytes = greatest(bytes - $2, 0) WHERE account_id = $1`, req.AccountID, bytes); err != nil {
			return fmt.Errorf("updating usage: %w", err)
		}
		resp.FilesDeleted = n
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}
