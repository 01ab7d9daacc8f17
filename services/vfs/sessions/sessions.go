// Package sessions is the vfs-svc contract of chat sessions: the model
// messages a turn replays and the display transcript.
package sessions

import (
	"context"
	"encoding/json"
	"regexp"
	"time"

	"github.com/google/uuid"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Endpoints of chat sessions (agent-svc/design.md "Sessions"), stored by vfs-svc for agent-svc and
// the gateway. A turn's writes (Begin, Save, Fail) are keyed by its run id,
// so a repeat is recognised and they are Idempotent, as is Rename (the
// session's title at the end of its first turn): a run's turn survives a
// vfs-svc replica that dies while it saves.
var (
	Load   = wire.Endpoint[SessionLoadRequest, SessionLoadResponse]{Subject: "vfs.sessions.load", Idempotent: true}
	Save   = wire.Endpoint[SessionSaveRequest, Session]{Subject: "vfs.sessions.save", Idempotent: true}
	List   = wire.Endpoint[SessionListRequest, SessionListResponse]{Subject: "vfs.sessions.list", Idempotent: true}
	Get    = wire.Endpoint[SessionGetRequest, SessionGetResponse]{Subject: "vfs.sessions.get", Idempotent: true}
	Delete = wire.Endpoint[SessionDeleteRequest, SessionDeleteResponse]{Subject: "vfs.sessions.delete"}
	// Rename sets a title: the same one set again is the same session.
	Rename = wire.Endpoint[SessionRenameRequest, Session]{Subject: "vfs.sessions.rename", Idempotent: true}
	// Begin records a run's question as a turn in progress, creating the
	// session if needed, before the run's first model or tool step.
	Begin = wire.Endpoint[SessionBeginRequest, Session]{Subject: "vfs.sessions.begin", Idempotent: true}
	// Fail records that a turn in progress ended without its run saving
	// it: whoever noticed (the gateway, when the agent replica died)
	// calls it.
	Fail = wire.Endpoint[SessionFailRequest, SessionFailResponse]{Subject: "vfs.sessions.fail", Idempotent: true}
)

// FinishRunning is the finish reason of a turn whose run has not ended:
// Begin records it, and Save or Fail replaces it.
const FinishRunning = "running"

// sessionIDPattern keeps session ids safe in paths, subjects and logs.
var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// NewID mints the id of a new session, for whoever starts a session
// without an id (the gateway, for a Base turn's token or a turn's
// attachments; agent-svc names a new session after its first run).
func NewID() string { return uuid.NewString() }

// CheckID returns an invalid_argument error unless id is a well-formed
// session id: 1 to 128 letters, digits, '-' or '_'.
func CheckID(id string) error {
	if !sessionIDPattern.MatchString(id) {
		return wire.Errorf(wire.InvalidArgument, "session_id must be 1 to 128 letters, digits, '-' or '_'")
	}
	return nil
}

// Session is one conversation's summary row.
type Session struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	Agent     string    `json:"agent,omitempty"`
	Turns     int       `json:"turns"`
	Created   time.Time `json:"created"`
	Updated   time.Time `json:"updated"`
	AccountID string    `json:"-"`
}

// Turn is one question and its display transcript.
type Turn struct {
	Seq      int    `json:"seq"`
	Question string `json:"question"`
	Answer   string `json:"answer"`
	// Finish is the run's finish reason (agent.Finish*), FinishRunning
	// while it runs.
	Finish string `json:"finish_reason"`
	// RunID is the run that answers the turn; a Save naming the run of a
	// turn Begin recorded completes that turn instead of adding one.
	RunID string `json:"run_id,omitempty"`
	// Error says why a turn that did not finish with stop failed.
	Error   string    `json:"error,omitempty"`
	Created time.Time `json:"created"`
	// Events is the display transcript: the turn's events in order,
	// without heartbeats and with text deltas merged.
	Events json.RawMessage `json:"events,omitempty"`
}

// SessionLoadRequest reads the model messages a turn replays. A session id
// that does not exist is not_found; one that belongs to another account is
// already_exists (the id is taken), so a turn can be refused before it runs.
type SessionLoadRequest struct {
	AccountID string `json:"account_id"`
	SessionID string `json:"session_id"`
}

// SessionLoadResponse holds the replayable model messages (tool calls
// paired with their results; older turns possibly summarized).
type SessionLoadResponse struct {
	Session  Session         `json:"session"`
	Messages json.RawMessage `json:"messages"`
}

// SessionSaveRequest records a finished turn in one transaction: the new
// model messages replace the old ones, and the turn of Turn.RunID (required)
// is completed (the turn Begin recorded) or appended. A session that does
// not exist is created for the account; one that belongs to another account
// is already_exists (the id is taken). Saving a run's turn again with the
// same answer, finish, error and events changes nothing and answers the
// session as the first save left it.
type SessionSaveRequest struct {
	AccountID string          `json:"account_id"`
	SessionID string          `json:"session_id"`
	Title     string          `json:"title,omitempty"`
	Agent     string          `json:"agent,omitempty"`
	Messages  json.RawMessage `json:"messages"`
	Turn      Turn            `json:"turn"`
}

// SessionBeginRequest records a run's question as a turn in progress
// (finish FinishRunning). A session that does not exist is created for the
// account with no messages; one of another account is already_exists.
// Beginning the same run twice records one turn.
type SessionBeginRequest struct {
	AccountID string `json:"account_id"`
	SessionID string `json:"session_id"`
	RunID     string `json:"run_id"`
	Question  string `json:"question"`
	Title     string `json:"title,omitempty"`
	Agent     string `json:"agent,omitempty"`
}

// SessionFailRequest marks the turn of a run failed when it is still in
// progress; a turn its run already saved is left alone. Failing a turn
// again with the same finish and error answers Marked as the first time.
type SessionFailRequest struct {
	AccountID string `json:"account_id"`
	SessionID string `json:"session_id"`
	RunID     string `json:"run_id"`
	// Finish is the finish reason recorded (agent.Finish*, not running).
	Finish string `json:"finish_reason"`
	// Error says why the turn failed.
	Error string `json:"error"`
}

// SessionFailResponse says whether the turn is marked with this failure.
type SessionFailResponse struct {
	Marked bool `json:"marked"`
}

// SessionListRequest pages through an account's sessions, newest first.
type SessionListRequest struct {
	AccountID string `json:"account_id"`
	// Limit defaults to 20, at most 100.
	Limit int `json:"limit,omitempty"`
	// Cursor is the NextCursor of the previous page.
	Cursor string `json:"cursor,omitempty"`
}

// SessionListResponse is one page.
type SessionListResponse struct {
	Sessions   []Session `json:"sessions"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// SessionGetRequest reads a session with its display transcript.
type SessionGetRequest struct {
	AccountID string `json:"account_id"`
	SessionID string `json:"session_id"`
}

// SessionGetResponse is a session and its turns in order.
type SessionGetResponse struct {
	Session Session `json:"session"`
	Turns   []Turn  `json:"turns"`
}

// SessionDeleteRequest deletes a session, its turns and its VFS files.
type SessionDeleteRequest struct {
	AccountID string `json:"account_id"`
	SessionID string `json:"session_id"`
}

// SessionDeleteResponse counts the VFS files removed with the session.
type SessionDeleteResponse struct {
	FilesDeleted int64 `json:"files_deleted"`
}

// MaxSessionTitle is the longest title, in characters, a session can be
// renamed to.
const MaxSessionTitle = 120

// SessionRenameRequest sets a session's title (1 to MaxSessionTitle
// characters once runs of spaces are collapsed).
type SessionRenameRequest struct {
	AccountID string `json:"account_id"`
	SessionID string `json:"session_id"`
	Title     string `json:"title"`
}

// Sessions is the typed client of session storage.
type Sessions struct{ c *wire.Client }

// NewSessions returns a Sessions client over c.
func NewSessions(c *wire.Client) *Sessions { return &Sessions{c: c} }

// Load reads the model messages of a session (not_found if absent).
func (s *Sessions) Load(ctx context.Context, req *SessionLoadRequest) (*SessionLoadResponse, error) {
	return Load.Call(ctx, s.c, req)
}

// Save records a finished turn.
func (s *Sessions) Save(ctx context.Context, req *SessionSaveRequest) (*Session, error) {
	return Save.Call(ctx, s.c, req)
}

// Begin records a run's question as a turn in progress.
func (s *Sessions) Begin(ctx context.Context, req *SessionBeginRequest) (*Session, error) {
	return Begin.Call(ctx, s.c, req)
}

// Fail marks a run's turn in progress failed.
func (s *Sessions) Fail(ctx context.Context, req *SessionFailRequest) (*SessionFailResponse, error) {
	return Fail.Call(ctx, s.c, req)
}

// List pages through sessions.
func (s *Sessions) List(ctx context.Context, req *SessionListRequest) (*SessionListResponse, error) {
	return List.Call(ctx, s.c, req)
}

// Get reads a session and its transcript.
func (s *Sessions) Get(ctx context.Context, req *SessionGetRequest) (*SessionGetResponse, error) {
	return Get.Call(ctx, s.c, req)
}

// Delete removes a session and its files.
func (s *Sessions) Delete(ctx context.Context, req *SessionDeleteRequest) (*SessionDeleteResponse, error) {
	return Delete.Call(ctx, s.c, req)
}

// Rename sets a session's title and returns the session (not_found if absent).
func (s *Sessions) Rename(ctx context.Context, req *SessionRenameRequest) (*Session, error) {
	return Rename.Call(ctx, s.c, req)
}
