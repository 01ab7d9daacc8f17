package deep

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/agent-svc/internal/jsrepl"
	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/agent-svc/internal/skills"
	"github.com/mirobody/mirobody-go/agent-svc/internal/turn"
	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/servicetest"
)

const todo = `{"todos":[{"content":"x","status":"pending"}]}`

func TestLoopEndings(t *testing.T) {
	loopForever := func(r *scripted.Received) (scripted.Step, error) {
		return scripted.Step{Calls: []scripted.Call{{Name: "write_todos", Args: todo}}}, nil
	}
	cases := []struct {
		name    string
		respond scripted.Responder
		timeout time.Duration
		finish  string
		errText string
		// results are the tool results the model saw in its last request.
		results []string
	}{
		{"max steps", loopForever, 0, agent.FinishError, "MAX_STEPS", nil},
		{"deadline", func(r *scripted.Received) (scripted.Step, error) {
			return scripted.Step{Delay: time.Second, Text: "slow"}, nil
		}, 200 * time.Millisecond, agent.FinishError, "ran out of time", nil},
		{"empty answer", scripted.Sequence(scripted.Step{}), 0, agent.FinishEmpty, "", nil},
		{"tool errors go back to the model", scripted.Sequence(
			scripted.Step{Calls: []scripted.Call{{Name: "nope", Args: `{}`}, {Name: "write_todos", Args: `{"todos":[{"content":"x","status":"done"}]}`}, {Name: "write_todos", Args: `not json`}}},
			scripted.Step{Text: "recovered"}), 0, agent.FinishStop, "",
			[]string{`tool "nope" is not available`, `status "done"`, "not valid JSON"}},
		{"configured subagent", scripted.Sequence(
			scripted.Step{Calls: []scripted.Call{{Name: "task", Args: `{"description":"check","subagent_type":"critic"}`}}},
			scripted.Step{Text: "critique"},
			scripted.Step{Text: "final"}), 0, agent.FinishStop, "", []string{"critique"}},
		{"unknown subagent", scripted.Sequence(
			scripted.Step{Calls: []scripted.Call{{Name: "task", Args: `{"description":"check","subagent_type":"ghost"}`}}},
			scripted.Step{Text: "final"}), 0, agent.FinishStop, "", []string{`no subagent "ghost"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := scripted.New(tc.respond)
			t.Cleanup(srv.Close)
			a := New(Options{MaxSteps: 3, Log: servicetest.Logger(t), Subagents: map[string]Subagent{"critic": {Description: "Critiques", Prompt: "You critique."}}})
			ctx := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			var mu sync.Mutex
			var events []agent.Event
			out, err := a.Run(ctx, &turn.Turn{AccountID: "a", SessionID: "s", Question: "q", Model: "m",
				Provider: llm.NewOpenAI(llm.ClientOptions{BaseURL: srv.OpenAIBaseURL(), APIKey: "k"}), Emit: func(e agent.Event) { mu.Lock(); events = append(events, e); mu.Unlock() }})
			if err != nil {
				t.Fatal(err)
			}
			if out.Finish != tc.finish {
				t.Fatalf("finish %q, want %q; events %+v", out.Finish, tc.finish, events)
			}
			var errs []string
			for _, e := range events {
				if e.Type == agent.EventError {
					errs = append(errs, e.Message)
				}
			}
			if tc.errText != "" && (len(errs) != 1 || !strings.Contains(errs[0], tc.errText)) {
				t.Fatalf("error events %q, want one with %q", errs, tc.errText)
			}
			// Saved history holds only complete steps: every tool call has its result.
			pending := map[string]bool{}
			for _, m := range out.Messages {
				for _, c := range m.ToolCalls {
					pending[c.ID] = true
				}
				delete(pending, m.ToolCallID)
			}
			if len(pending) > 0 {
				t.Fatalf("history has unanswered tool calls: %+v", out.Messages)
			}
			if tc.results != nil {
				reqs := srv.Requests()
				got := reqs[len(reqs)-1].ToolResults()
				if len(got) != len(tc.results) {
					t.Fatalf("results %+v", got)
				}
				for i, want := range tc.results {
					if !strings.Contains(got[i].Content, want) {
						t.Errorf("result %d %q lacks %q", i, got[i].Content, want)
					}
				}
			}
			if tc.name == "configured subagent" && srv.Requests()[1].System != "You critique." {
				t.Errorf("subagent system prompt %q", srv.Requests()[1].System)
			}
		})
	}
}

func TestPrompt(t *testing.T) {
	tmpl, err := ParsePrompt("")
	if err != nil {
		t.Fatal(err)
	}
	got, err := renderPrompt(tmpl, turn.PromptData{Date: "2026-01-02", Language: "French", Profile: map[string]string{"name": "Ada"},
		Skills: []skills.Skill{{Name: "lab", Description: "Use for labs."}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Today is 2026-01-02.", "Answer in French.", "- name: Ada", "- lab: Use for labs.", "/skills/<name>/SKILL.md"} {
		if !strings.Contains(got, want) {
			t.Errorf("prompt lacks %q:\n%s", want, got)
		}
	}
	if _, err := ParsePrompt("{{.Broken"); err == nil {
		t.Error("a broken template parsed")
	}
}

func TestNumberLines(t *testing.T) {
	cases := []struct {
		in    string
		start int64
		want  string
	}{
		{"a\nb\n", 1, "     1\ta\n     2\tb\n"},
		{"last", 10, "    10\tlast\n"},
		{"x\r\n", 0, "     1\tx\n"},
	}
	for _, tc := range cases {
		if got := numberLines(tc.in, tc.start); got != tc.want {
			t.Errorf("numberLines(%q, %d) = %q, want %q", tc.in, tc.start, got, tc.want)
		}
	}
}

func TestREPLStateNotice(t *testing.T) {
	srv := scripted.New(scripted.Sequence(
		scripted.Step{Calls: []scripted.Call{{Name: "js_eval", Args: `{"code":"1 + 1"}`}}},
		scripted.Step{Text: "ok"}))
	t.Cleanup(srv.Close)
	a := New(Options{Log: servicetest.Logger(t), REPL: jsrepl.NewStore(jsrepl.Options{Log: servicetest.Logger(t)})})
	history := []llm.Message{{Role: llm.RoleUser, Content: "before"}, {Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c", Name: "js_eval", Args: []byte(`{}`)}}},
		{Role: llm.RoleTool, ToolCallID: "c", Content: "=> 1"}, {Role: llm.RoleAssistant, Content: "done"}}
	_, err := a.Run(context.Background(), &turn.Turn{AccountID: "a", SessionID: "moved", Question: "q", Model: "m", History: history,
		Provider: llm.NewOpenAI(llm.ClientOptions{BaseURL: srv.OpenAIBaseURL(), APIKey: "k"}), Emit: func(agent.Event) {}})
	if err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[1].ToolResults()[0].Content
	if !strings.Contains(got, "REPL state of earlier turns is gone") || !strings.Contains(got, "=> 2") {
		t.Fatalf("result %q", got)
	}
}

// A provider failure's error event names the provider and the HTTP status,
// never the provider's body or the key (Issue 9).
func TestProviderErrorEvents(t *testing.T) {
	cases := []struct {
		status int
		finish string
		want   string
	}{
		{401, agent.FinishError, "provider openrouter: HTTP 401 rejected the API key"},
		{429, agent.FinishUnavailable, "provider openrouter: HTTP 429 rate limited; try again later"},
		{500, agent.FinishUnavailable, "provider openrouter: HTTP 500 unavailable"},
	}
	for _, tc := range cases {
		for _, wire := range []string{"openai", "anthropic"} {
			t.Run(fmt.Sprintf("%s/%d", wire, tc.status), func(t *testing.T) {
				srv := scripted.New(scripted.Sequence(scripted.Step{Fault: &scripted.Fault{Status: tc.status}}))
				t.Cleanup(srv.Close)
				opts := llm.ClientOptions{Name: "openrouter", APIKey: "sk-do-not-show", MaxRetries: -1}
				var p llm.Provider
				if wire == "openai" {
					opts.BaseURL = srv.OpenAIBaseURL()
					p = llm.NewOpenAI(opts)
				} else {
					opts.BaseURL = srv.AnthropicBaseURL()
					p = llm.NewAnthropic(opts)
				}
				var errs []string
				out, err := New(Options{Log: servicetest.Logger(t)}).Run(context.Background(), &turn.Turn{AccountID: "a", SessionID: "s", Question: "q", Model: "m",
					Provider: p, Emit: func(e agent.Event) {
						if e.Type == agent.EventError {
							errs = append(errs, e.Message)
						}
					}})
				if err != nil {
					t.Fatal(err)
				}
				if out.Finish != tc.finish || len(errs) != 1 || errs[0] != tc.want {
					t.Fatalf("finish %q errors %q; want %q and %q", out.Finish, errs, tc.finish, tc.want)
				}
			})
		}
	}
}

// After an eval over the memory budget, the model learns that the state is
// gone, in that eval's result and in the next one.
func TestREPLMemoryResetNotice(t *testing.T) {
	srv := scripted.New(scripted.Sequence(
		scripted.Step{Calls: []scripted.Call{{Name: "js_eval", Args: `{"code":"globalThis.x = 1; 'x'.repeat(2 ** 30)"}`}}},
		scripted.Step{Calls: []scripted.Call{{Name: "js_eval", Args: `{"code":"typeof x"}`}}},
		scripted.Step{Text: "ok"}))
	t.Cleanup(srv.Close)
	a := New(Options{Log: servicetest.Logger(t), REPL: jsrepl.NewStore(jsrepl.Options{MaxMemory: 32 << 20, Log: servicetest.Logger(t)})})
	_, err := a.Run(context.Background(), &turn.Turn{AccountID: "a", SessionID: "mem", Question: "q", Model: "m",
		Provider: llm.NewOpenAI(llm.ClientOptions{BaseURL: srv.OpenAIBaseURL(), APIKey: "k"}), Emit: func(agent.Event) {}})
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	first, second := reqs[1].ToolResults()[0], reqs[2].ToolResults()[0]
	if !strings.Contains(first.Content, "Error: the eval exceeded the REPL memory budget of 32 MiB") {
		t.Errorf("breaching eval: %+v", first)
	}
	if !strings.Contains(second.Content, "REPL state was reset because an earlier eval went over the memory budget") || !strings.Contains(second.Content, "=> undefined") {
		t.Errorf("next eval: %q", second.Content)
	}
}

// When the replica's kept REPL state is full (JS_MAX_STATE_BYTES), the
// least recently used state is dropped, and the model learns it at the
// session's next eval.
func TestREPLStateEvictedNotice(t *testing.T) {
	srv := scripted.New(scripted.Sequence(
		scripted.Step{Calls: []scripted.Call{{Name: "js_eval", Args: `{"code":"globalThis.x = new Array(2 ** 18).fill(0).map((v, i) => i); 1"}`}}},
		scripted.Step{Calls: []scripted.Call{{Name: "js_eval", Args: `{"code":"typeof x"}`}}},
		scripted.Step{Text: "ok"}))
	t.Cleanup(srv.Close)
	a := New(Options{Log: servicetest.Logger(t), REPL: jsrepl.NewStore(jsrepl.Options{MaxMemory: 32 << 20, MaxStateBytes: 1 << 20, Log: servicetest.Logger(t)})})
	_, err := a.Run(context.Background(), &turn.Turn{AccountID: "a", SessionID: "evicted", Question: "q", Model: "m",
		Provider: llm.NewOpenAI(llm.ClientOptions{BaseURL: srv.OpenAIBaseURL(), APIKey: "k"}), Emit: func(agent.Event) {}})
	if err != nil {
		t.Fatal(err)
	}
	second := srv.Requests()[2].ToolResults()[0]
	if !strings.Contains(second.Content, "dropped to make room") || !strings.Contains(second.Content, "JS_MAX_STATE_BYTES") || !strings.Contains(second.Content, "=> undefined") {
		t.Errorf("next eval: %q", second.Content)
	}
}
