package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/agent-svc/scripted"
)

func providers(s *scripted.Server) map[string]llm.Provider {
	return map[string]llm.Provider{
		"openai":    llm.NewOpenAI(llm.ClientOptions{BaseURL: s.OpenAIBaseURL(), APIKey: "k", MaxRetries: 2}),
		"anthropic": llm.NewAnthropic(llm.ClientOptions{BaseURL: s.AnthropicBaseURL(), APIKey: "k", MaxRetries: 2}),
	}
}

var tools = []llm.Tool{{Name: "lookup", Description: "Look up", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)}}

func TestStream(t *testing.T) {
	for _, name := range []string{"openai", "anthropic"} {
		t.Run(name, func(t *testing.T) {
			s := scripted.New(scripted.Sequence(
				scripted.Step{Fault: &scripted.Fault{Status: 429, RetryAfter: "0"}},
				scripted.Step{Fault: &scripted.Fault{Status: 500}},
				scripted.Step{Reasoning: "thinking", Text: "Let me look.", Calls: []scripted.Call{{Name: "lookup", Args: `{"q":"x"}`}}},
				scripted.Step{Text: "It is 42."},
			))
			t.Cleanup(s.Close)
			p := providers(s)[name]
			ctx := context.Background()
			req := &llm.Request{Model: "m", System: "be brief", Tools: tools, Messages: []llm.Message{{Role: llm.RoleUser, Content: "what?"}}}
			var text, reasoning string
			resp, err := p.Stream(ctx, req, func(d llm.Delta) { text += d.Text; reasoning += d.Reasoning })
			if err != nil {
				t.Fatal(err)
			}
			if text != "Let me look." || reasoning != "thinking" || resp.StopReason != "tool_calls" {
				t.Fatalf("text %q reasoning %q stop %q", text, reasoning, resp.StopReason)
			}
			if len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0].Name != "lookup" || string(resp.Message.ToolCalls[0].Args) != `{"q":"x"}` {
				t.Fatalf("tool calls %+v", resp.Message.ToolCalls)
			}
			if resp.Usage.InputTokens != 100 || resp.Usage.OutputTokens != 10 {
				t.Fatalf("usage %+v", resp.Usage)
			}
			tc := resp.Message.ToolCalls[0]
			req.Messages = append(req.Messages, resp.Message, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: "42"})
			resp, err = p.Stream(ctx, req, func(llm.Delta) {})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != "It is 42." || resp.StopReason != "stop" {
				t.Fatalf("second answer %+v", resp)
			}
			got := s.Requests()
			if len(got) != 4 {
				t.Fatalf("%d requests, want 4 (two retried faults)", len(got))
			}
			last := got[3]
			if last.System != "be brief" || !last.HasTool("lookup") || len(last.ToolResults()) != 1 || last.ToolResults()[0].Content != "42" || last.ToolResults()[0].ToolCallID != tc.ID {
				t.Fatalf("last request %+v", last)
			}
			if errs := s.Errors(); len(errs) > 0 {
				t.Fatal(errs)
			}
		})
	}
}

func TestFaults(t *testing.T) {
	cases := []struct {
		name    string
		steps   []scripted.Step
		kind    string
		partial bool
	}{
		{"dropped", []scripted.Step{{Text: "half an answer", DropAfterText: true}}, "stream_broken", true},
		{"500 forever", []scripted.Step{{Fault: &scripted.Fault{Status: 500}}, {Fault: &scripted.Fault{Status: 500}}, {Fault: &scripted.Fault{Status: 500}}}, "unavailable", false},
		{"bad request", []scripted.Step{{Fault: &scripted.Fault{Status: 400}}}, "bad_request", false},
	}
	for _, name := range []string{"openai", "anthropic"} {
		for _, tc := range cases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				s := scripted.New(scripted.Sequence(tc.steps...))
				t.Cleanup(s.Close)
				_, err := providers(s)[name].Stream(context.Background(), &llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "q"}}}, func(llm.Delta) {})
				var le *llm.Error
				if !errors.As(err, &le) || le.Kind != tc.kind || le.Partial != tc.partial {
					t.Fatalf("err %v, want kind %s partial %v", err, tc.kind, tc.partial)
				}
			})
		}
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	s := scripted.New(scripted.Sequence(scripted.Step{Fault: &scripted.Fault{Status: 429, RetryAfter: "1"}}, scripted.Step{Text: "ok"}))
	t.Cleanup(s.Close)
	start := time.Now()
	resp, err := providers(s)["openai"].Stream(context.Background(), &llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "q"}}}, func(llm.Delta) {})
	if err != nil || resp.Message.Content != "ok" {
		t.Fatal(resp, err)
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("retried after %v, want Retry-After 1s honoured", d)
	}
}
