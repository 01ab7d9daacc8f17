// Package runs is the vfs-svc contract of durable runs (agent-svc/design.md
// "Durable runs"): a chat turn's owner lease, its checkpoints, its numbered
// events for replay, and a tool call waiting for the user's approval.
package runs

import (
	"context"
	"encoding/json"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Endpoints of durable runs, served by vfs-svc for agent-svc (which owns,
// checkpoints and claims runs) and the gateway (which replays their events
// and passes on the user's cancel and approval). agent-svc's writes are
// keyed (by the owner token, a fresh UUID per create and claim, and by
// event sequence numbers), so a repeat is recognised and they are
// Idempotent: a run goes on through a vfs-svc replica that dies.
var (
	// Create records a new run owned by its caller; the same create sent
	// again answers the run it created.
	Create = wire.Endpoint[CreateRequest, Run]{Subject: "vfs.runs.create", Idempotent: true}
	// Record appends events, replaces the checkpoint and renews the lease,
	// in one transaction, if the caller still owns the run. An event
	// already recorded (by run and seq) is kept as it was, and a pausing
	// record sent again succeeds while the run waits on that call.
	Record = wire.Endpoint[RecordRequest, RecordResponse]{Subject: "vfs.runs.record", Idempotent: true}
	// Claim takes over a run whose lease expired (or that an approval or
	// a cancel woke), or the oldest such run when RunID is empty. A claim
	// sent again answers the run its owner token already holds.
	Claim = wire.Endpoint[ClaimRequest, ClaimResponse]{Subject: "vfs.runs.claim", Idempotent: true}
	// Events reads a run's events after a sequence number, with its state.
	Events = wire.Endpoint[EventsRequest, EventsResponse]{Subject: "vfs.runs.events", Idempotent: true}
	// Decide records the user's decision on a paused run and wakes it.
	Decide = wire.Endpoint[DecideRequest, Run]{Subject: "vfs.runs.decide"}
	// Cancel marks a run cancelled; its owner, or whoever claims it next,
	// stops it.
	Cancel = wire.Endpoint[CancelRequest, Run]{Subject: "vfs.runs.cancel"}
)

// Contracts lists every endpoint of the package, for the golden tests and
// for the server's check that it serves them all.
func Contracts() []wire.Contract {
	return []wire.Contract{Create, Record, Claim, Events, Decide, Cancel}
}

// Run states.
const (
	// StateRunning: a replica holds the lease, or will claim the run
	// once the lease has expired.
	StateRunning = "running"
	// StatePaused: a tool call waits for the user's approval; nobody
	// owns the run.
	StatePaused = "paused"
	// StateDone: the run's turn is saved in its session (or failed).
	StateDone = "done"
)

// Approval decisions.
const (
	DecisionApprove = "approve"
	DecisionEdit    = "edit"
	DecisionReject  = "reject"
	// DecisionAnswer answers a tool's question (Approval.Ask) with Answer.
	DecisionAnswer = "answer"
)

// Run is a run's row.
type Run struct {
	ID        string `json:"id"`
	AccountID string `json:"account_id"`
	SessionID string `json:"session_id"`
	State     string `json:"state"`
	// Request is the run's start request, as agent-svc needs it to
	// resume the run elsewhere.
	Request json.RawMessage `json:"request"`
	// Owner is the lease holder's token (fresh at each claim).
	Owner string `json:"owner,omitempty"`
	// Takeovers counts the claims after the first owner.
	Takeovers int `json:"takeovers"`
	// Checkpoint is the agent's last saved state (opaque here).
	Checkpoint json.RawMessage `json:"checkpoint,omitempty"`
	// LastSeq is the sequence number of the run's last recorded event.
	LastSeq int64 `json:"last_seq"`
	// Approval is the tool call waiting for the user (paused runs).
	Approval *Approval `json:"approval,omitempty"`
	// Decision is the user's answer to Approval, until the run takes it.
	Decision *Decision `json:"decision,omitempty"`
	// Cancelled says the user stopped the run.
	Cancelled bool `json:"cancelled,omitempty"`
	// AgeMS is how long ago the run was created.
	AgeMS int64 `json:"age_ms"`
}

// Approval is a tool call that needs the user's approval (INTERRUPT_ON_{NAME}).
type Approval struct {
	ToolCallID string          `json:"tool_call_id"`
	Tool       string          `json:"tool"`
	Arguments  json.RawMessage `json:"arguments"`
	// Ask, when set, makes this a tool's question to the user rather than
	// an approval: the params of its elicitation/create request (message,
	// requestedSchema), answered with DecisionAnswer.
	Ask json.RawMessage `json:"ask,omitempty"`
}

// Decision is the user's answer to an approval request.
type Decision struct {
	ToolCallID string `json:"tool_call_id"`
	// Decision is approve, edit, reject or answer.
	Decision string `json:"decision"`
	// Arguments replace the call's arguments (edit).
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Reason is what the model sees as the tool result (reject).
	Reason string `json:"reason,omitempty"`
	// Answer is the user's ElicitResult {action, content} (answer).
	Answer json.RawMessage `json:"answer,omitempty"`
}

// Event is one numbered event of a run; Data is the agent.Event JSON.
type Event struct {
	Seq  int64           `json:"seq"`
	Data json.RawMessage `json:"data"`
}

// CreateRequest records a run owned by Owner for LeaseMS.
type CreateRequest struct {
	RunID     string          `json:"run_id"`
	AccountID string          `json:"account_id"`
	SessionID string          `json:"session_id"`
	Request   json.RawMessage `json:"request"`
	Owner     string          `json:"owner"`
	LeaseMS   int             `json:"lease_ms"`
}

// RecordRequest appends Events (numbered after the run's last), replaces
// the checkpoint when Checkpoint is set, and renews the lease by LeaseMS
// (0 releases it, for a replica that stops and hands the run over). With
// Approval set the run pauses: the lease ends and nobody owns it until the
// user decides. The caller must be the owner (failed_precondition
// otherwise: it lost the run).
type RecordRequest struct {
	RunID      string          `json:"run_id"`
	Owner      string          `json:"owner"`
	LeaseMS    int             `json:"lease_ms"`
	Events     []Event         `json:"events,omitempty"`
	Checkpoint json.RawMessage `json:"checkpoint,omitempty"`
	Approval   *Approval       `json:"approval,omitempty"`
	// TakeDecision clears the decision the run has acted on.
	TakeDecision bool `json:"take_decision,omitempty"`
}

// RecordResponse tells the owner whether the user cancelled the run.
type RecordResponse struct {
	Cancelled bool `json:"cancelled"`
}

// ClaimRequest takes over RunID, or the oldest claimable run when RunID
// is empty, for Owner until LeaseMS from now.
type ClaimRequest struct {
	RunID   string `json:"run_id,omitempty"`
	Owner   string `json:"owner"`
	LeaseMS int    `json:"lease_ms"`
}

// ClaimResponse holds the claimed run; Claimed is false when there is
// none to take (the lease is alive, the run is paused or done).
type ClaimResponse struct {
	Claimed bool `json:"claimed"`
	Run     Run  `json:"run"`
}

// EventsRequest reads the events after After of a run of AccountID.
type EventsRequest struct {
	RunID     string `json:"run_id"`
	AccountID string `json:"account_id"`
	After     int64  `json:"after"`
}

// EventsResponse is at most 1000 events in order and the run's state;
// More says that more events follow.
type EventsResponse struct {
	Events   []Event   `json:"events"`
	More     bool      `json:"more,omitempty"`
	State    string    `json:"state"`
	Approval *Approval `json:"approval,omitempty"`
}

// DecideRequest answers the approval a paused run of AccountID waits for.
type DecideRequest struct {
	RunID     string   `json:"run_id"`
	AccountID string   `json:"account_id"`
	Decision  Decision `json:"decision"`
}

// CancelRequest stops a run of AccountID.
type CancelRequest struct {
	RunID     string `json:"run_id"`
	AccountID string `json:"account_id"`
}

// Client is the typed client of run storage.
type Client struct{ c *wire.Client }

// NewClient returns a Client over c.
func NewClient(c *wire.Client) *Client { return &Client{c: c} }

// Create records a new run.
func (c *Client) Create(ctx context.Context, req *CreateRequest) (*Run, error) {
	return Create.Call(ctx, c.c, req)
}

// Record appends events and a checkpoint and renews the lease.
func (c *Client) Record(ctx context.Context, req *RecordRequest) (*RecordResponse, error) {
	return Record.Call(ctx, c.c, req)
}

// Claim takes over a run.
func (c *Client) Claim(ctx context.Context, req *ClaimRequest) (*ClaimResponse, error) {
	return Claim.Call(ctx, c.c, req)
}

// Events reads a run's events.
func (c *Client) Events(ctx context.Context, req *EventsRequest) (*EventsResponse, error) {
	return Events.Call(ctx, c.c, req)
}

// Decide answers a paused run's approval.
func (c *Client) Decide(ctx context.Context, req *DecideRequest) (*Run, error) {
	return Decide.Call(ctx, c.c, req)
}

// Cancel stops a run.
func (c *Client) Cancel(ctx context.Context, req *CancelRequest) (*Run, error) {
	return Cancel.Call(ctx, c.c, req)
}
