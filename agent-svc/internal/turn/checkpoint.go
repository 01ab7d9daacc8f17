package turn

import (
	"context"
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
	// Steps counts the model steps taken (MAX_STEPS goes on counting).
	Steps int       `json:"steps"`
	Usage llm.Usage `json:"usage"`
}

// ErrPaused ends a turn that waits for the user's approval: its state is
// checkpointed, and the run resumes when the user decides.
var ErrPaused = errors.New("the run waits for the user's approval")

// Durable is how an agent makes a turn survive its replica. A nil Durable
// (tests, subagents) checkpoints nothing and never pauses.
type Durable interface {
	// Save records cp before the turn goes on.
	Save(ctx context.Context, cp *Checkpoint) error
	// Pause records cp and the approval that call needs, and ends the
	// turn with ErrPaused.
	Pause(ctx context.Context, cp *Checkpoint, call llm.ToolCall) error
}
