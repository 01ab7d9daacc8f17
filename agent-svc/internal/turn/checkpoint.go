package turn

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/services/vfs/runs"
)

// Checkpoint is a turn's durable state after a model step or a tool
// result (agent-svc/design.md "Durable runs"): a turn resumed from it on
// another replica repeats no completed tool call.
type Checkpoint struct {
	// Messages are the session's history plus the turn's completed steps.
	Messages []llm.Message `json:"messages"`
	// Pending is the model's message whose tool calls are under way.
	Pending *llm.Message `json:"pending,omitempty"`
	// Results are the finished results of Pending's calls, by call id.
	Results map[string]llm.Message `json:"results,omitempty"`
	// Decisions are the user's answers to approvals, by call id.
	Decisions map[string]runs.Decision `json:"decisions,omitempty"`
	// Asks are the questions of Pending's calls to the user, by call id.
	Asks map[string]Ask `json:"asks,omitempty"`
	// Steps counts the model steps taken (MAX_STEPS goes on counting).
	Steps int       `json:"steps"`
	Usage llm.Usage `json:"usage"`
}

// Ask is a tool call's question to the user (mirobody.elicit): the tool
// stopped at it and runs again with Responses plus the answer under Key
// (registry-svc/design.md "Elicitation and sampling").
type Ask struct {
	// Key names the question among the tool's input requests.
	Key string `json:"key"`
	// Params are the elicitation/create params (message, requestedSchema).
	Params json.RawMessage `json:"params"`
	// Responses are the answers of the tool's earlier questions, by key.
	Responses map[string]json.RawMessage `json:"responses,omitempty"`
	// Replay names the input requests the tool stopped at with it.
	Replay []string `json:"replay,omitempty"`
	// Answer is the user's ElicitResult, once given.
	Answer json.RawMessage `json:"answer,omitempty"`
}

// ErrPaused ends a turn that waits for the user's approval or answer: its
// state is checkpointed, and the run resumes when the user decides.
var ErrPaused = errors.New("the run waits for the user")

// Durable is how an agent makes a turn survive its replica. A nil Durable
// (tests, subagents) checkpoints nothing and never pauses.
type Durable interface {
	// Save records cp before the turn goes on.
	Save(ctx context.Context, cp *Checkpoint) error
	// Pause records cp and the approval that call needs (or, with ask
	// set, its question to the user), and ends the turn with ErrPaused.
	Pause(ctx context.Context, cp *Checkpoint, call llm.ToolCall, ask *Ask) error
}
