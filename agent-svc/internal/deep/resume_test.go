package deep

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/agent-svc/internal/turn"
	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/servicetest"
)

// saves keeps the checkpoints a turn saves (turn.Durable).
type saves struct {
	mu  sync.Mutex
	cps []turn.Checkpoint
}

func (s *saves) Save(_ context.Context, cp *turn.Checkpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cps = append(s.cps, *cp)
	return nil
}

func (s *saves) Pause(context.Context, *turn.Checkpoint, llm.ToolCall, *turn.Ask) error {
	return turn.ErrPaused
}

// TestResume: a turn resumed from a checkpoint runs only the pending
// step's calls that have no result, keeps the results in call order, and
// checkpoints after the model step and each tool result.
func TestResume(t *testing.T) {
	var seen []llm.Message
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		seen = r.ToolResults()
		return scripted.Step{Text: "final"}, nil
	})
	t.Cleanup(srv.Close)
	a := New(Options{Log: servicetest.Logger(t)})
	pending := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
		{ID: "c1", Name: "write_todos", Args: json.RawMessage(todo)}, {ID: "c2", Name: "write_todos", Args: json.RawMessage(todo)}}}
	cp := &turn.Checkpoint{Messages: []llm.Message{{Role: llm.RoleUser, Content: "q"}}, Pending: &pending, Steps: 1,
		Results: map[string]llm.Message{"c1": {Role: llm.RoleTool, ToolCallID: "c1", ToolName: "write_todos", Content: "done before"}}}
	durable := &saves{}
	var calls []string
	out, err := a.Run(context.Background(), &turn.Turn{AccountID: "a", SessionID: "s", Question: "q", Model: "m", Resume: cp, Durable: durable,
		Provider: llm.NewOpenAI(llm.ClientOptions{BaseURL: srv.OpenAIBaseURL(), APIKey: "k"}), Emit: func(e agent.Event) {
			if e.Type == agent.EventToolCall {
				calls = append(calls, e.ID)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Finish != agent.FinishStop || len(calls) != 1 || calls[0] != "c2" {
		t.Fatalf("finish %q, calls run %v: want only c2", out.Finish, calls)
	}
	if len(seen) != 2 || seen[0].ToolCallID != "c1" || seen[0].Content != "done before" || seen[1].ToolCallID != "c2" {
		t.Fatalf("the model saw the results %+v", seen)
	}
	if len(out.Messages) != 5 { // user, assistant with calls, two results, answer
		t.Fatalf("history %+v", out.Messages)
	}
	durable.mu.Lock()
	defer durable.mu.Unlock()
	if n := len(durable.cps); n != 1 || len(durable.cps[0].Results) != 2 || durable.cps[0].Steps != 1 {
		t.Fatalf("checkpoints %+v: want one after c2's result, with both results and the same step count", durable.cps)
	}
}
