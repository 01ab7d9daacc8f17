// Package turn is what every agent shares: one turn of a conversation in,
// its outcome out, events streamed on the way. The Deep agent runs its own
// tool loop behind Agent; the Base agent (the provider runs the loop
// against our /mcp) fits the same interface.
package turn

import (
	"context"
	"text/template"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/agent-svc/internal/skills"
	"github.com/mirobody/mirobody-go/services/agent"
)

// Agent runs turns.
type Agent interface {
	// Run runs one turn to its end. It returns an error only when the turn
	// could not start; every later failure is an Outcome with its finish
	// reason, after an error event.
	Run(ctx context.Context, t *Turn) (*Outcome, error)
}

// PromptData fills an agent's system prompt template.
type PromptData struct {
	Date     string
	Timezone string
	Language string
	// Profile holds the user's profile fields.
	Profile map[string]string
	Skills  []skills.Skill
}

// Turn is one turn of a conversation.
type Turn struct {
	AccountID string
	SessionID string
	Question  string
	// History is the session's replayable model messages.
	History  []llm.Message
	Provider llm.Provider
	// Remote is the Base agent's provider, which runs the tool loop itself
	// against our /mcp.
	Remote llm.MCPProvider
	// MCPToken is the short-lived token the Base agent's provider presents
	// to our /mcp (never the user's own key).
	MCPToken string
	Model    string
	// Prompt is the system prompt template the turn picked with
	// prompt_name; nil means the agent's own.
	Prompt *template.Template
	// PromptData fills the system prompt template.
	PromptData PromptData
	// Emit receives the turn's events (without sequence numbers), in order.
	Emit func(agent.Event)
	// MCPServers are the turn's own external MCP servers (the chat
	// request's mcp_servers), passed to registry-svc on list and call.
	MCPServers []agent.ServerSpec
	// Attachments are the files of the question, their content loaded.
	Attachments []llm.Attachment
	// Resume is the checkpoint a resumed turn continues from; nil starts
	// from History and Question.
	Resume *Checkpoint
	// Durable checkpoints the turn and pauses it for approvals; nil for
	// none.
	Durable Durable
	// Interrupt names the tools whose calls need the user's approval
	// (INTERRUPT_ON_{NAME}).
	Interrupt []string
	// CanAsk says the client answers tools' questions (the chat
	// request's can_ask): a durable turn's tools may then elicit.
	CanAsk bool
}

// UserMessage is the turn's question as a model message, with its
// attachments.
func (t *Turn) UserMessage() llm.Message {
	return llm.Message{Role: llm.RoleUser, Content: t.Question, Attachments: t.Attachments}
}

// Outcome is how a turn ended.
type Outcome struct {
	// Messages is the new replayable history: only completed steps, so
	// that no half-written assistant message is ever saved.
	Messages []llm.Message
	Answer   string
	Finish   string
	Usage    llm.Usage
}
