package base

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/agent-svc/internal/turn"
	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/servicetest"
)

const token = "test-base-token"

// mcpServer is a real MCP server (official SDK, Streamable HTTP) that
// refuses requests without the expected bearer token and records the
// Authorization headers it saw.
type mcpServer struct {
	URL  string
	mu   sync.Mutex
	auth []string
}

func (m *mcpServer) seen() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.auth...)
}

func startMCP(t *testing.T) *mcpServer {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1.0.0"}, nil)
	type addArgs struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "add", Description: "Adds two numbers"}, func(_ context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "fails", Description: "Always fails"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the tool broke"}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	m := &mcpServer{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.auth = append(m.auth, r.Header.Get("Authorization"))
		m.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.Header().Set("WWW-Authenticate", `Bearer scope="mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	m.URL = hs.URL + "/mcp"
	return m
}

func remotes(s *scripted.Server) map[string]llm.MCPProvider {
	return map[string]llm.MCPProvider{
		"openai-responses": llm.NewOpenAIResponses(llm.ClientOptions{BaseURL: s.OpenAIBaseURL(), APIKey: "k", MaxRetries: -1}),
		"anthropic":        llm.NewAnthropic(llm.ClientOptions{BaseURL: s.AnthropicBaseURL(), APIKey: "k", MaxRetries: -1}),
	}
}

// toolTurn lists and calls tools over MCP: one call that works, one that
// reports a tool error, one of an unknown tool, then answers.
func toolTurn(r *scripted.Received) (scripted.Step, error) {
	if r.MCP == nil || r.MCP.Label != ServerLabel || r.MCP.Authorization != "Bearer "+token {
		return scripted.Step{}, fmt.Errorf("request names MCP server %+v", r.MCP)
	}
	switch r.StepsSinceUser() {
	case 0:
		if !r.HasTool("add") || !r.HasTool("fails") || !strings.Contains(r.System, "Base agent") {
			return scripted.Step{}, fmt.Errorf("first step: tools %v, system %q", r.Tools, r.System)
		}
		return scripted.Step{Reasoning: "I will add.", Text: "Adding.", Calls: []scripted.Call{
			{Name: "add", Args: `{"a":1,"b":2}`}, {Name: "fails", Args: `{}`}, {Name: "nope", Args: `{}`}}}, nil
	case 1:
		res := r.ToolResults()
		if len(res) != 3 || res[0].Content != "3" || res[0].IsError || !res[1].IsError || res[1].Content != "the tool broke" || !res[2].IsError {
			return scripted.Step{}, fmt.Errorf("results %+v", res)
		}
		return scripted.Step{Text: "The sum is 3."}, nil
	}
	return scripted.Step{}, fmt.Errorf("unexpected step %d", r.StepsSinceUser())
}

type recorder struct {
	mu  sync.Mutex
	evs []agent.Event
}

func (r *recorder) emit(e agent.Event) { r.mu.Lock(); r.evs = append(r.evs, e); r.mu.Unlock() }

func (r *recorder) of(typ string) []agent.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []agent.Event
	for _, e := range r.evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func TestBaseTurnListsAndCallsTools(t *testing.T) {
	m := startMCP(t)
	srv := scripted.New(toolTurn)
	t.Cleanup(srv.Close)
	a := New(Options{MCPURL: m.URL, Log: servicetest.Logger(t)})
	for name, p := range remotes(srv) {
		t.Run(name, func(t *testing.T) {
			rec := &recorder{}
			out, err := a.Run(context.Background(), &turn.Turn{AccountID: "a", SessionID: "s", Question: "What is 1+2?", Model: "m",
				Remote: p, MCPToken: token, Emit: rec.emit})
			if err != nil {
				t.Fatal(err)
			}
			if errs := srv.Errors(); len(errs) > 0 {
				t.Fatalf("the scripted provider saw unexpected requests: %v", errs)
			}
			if out.Finish != agent.FinishStop || out.Answer != "The sum is 3." {
				t.Fatalf("outcome %+v; events %+v", out, rec.evs)
			}
			calls, results := rec.of(agent.EventToolCall), rec.of(agent.EventToolResult)
			if len(calls) != 3 || calls[0].Name != "add" || string(calls[0].Args) != `{"a":1,"b":2}` || calls[2].Name != "nope" {
				t.Fatalf("tool calls %+v", calls)
			}
			if len(results) != 3 || results[0].ToolCallID != calls[0].ID || results[0].Content != "3" || results[0].Status != agent.StatusOK ||
				results[1].Status != agent.StatusError || results[1].Content != "the tool broke" || results[2].Status != agent.StatusError {
				t.Fatalf("tool results %+v", results)
			}
			text := ""
			for _, e := range rec.of(agent.EventText) {
				text += e.Text
			}
			if text != "Adding.The sum is 3." || len(rec.of(agent.EventReasoning)) == 0 || len(rec.of(agent.EventUsage)) != 1 {
				t.Fatalf("text %q, events %+v", text, rec.evs)
			}
			// The history has the Deep agent's shape: calls answered by
			// tool messages, then the answer.
			msgs := out.Messages
			if len(msgs) != 6 || msgs[0].Role != llm.RoleUser || len(msgs[1].ToolCalls) != 3 || msgs[1].Content != "Adding." ||
				msgs[2].Role != llm.RoleTool || msgs[2].ToolCallID != msgs[1].ToolCalls[0].ID || msgs[2].ToolName != "add" || !msgs[4].IsError ||
				msgs[5].Content != "The sum is 3." {
				b, _ := json.MarshalIndent(msgs, "", " ")
				t.Fatalf("messages %s", b)
			}
		})
	}
	for _, h := range m.seen() {
		if h != "Bearer "+token {
			t.Fatalf("the MCP server saw Authorization %q", h)
		}
	}
}

func TestBaseHistoryReplayedAsText(t *testing.T) {
	m := startMCP(t)
	var mu sync.Mutex
	var got []llm.Message
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		mu.Lock()
		got = r.Messages
		mu.Unlock()
		return scripted.Step{Text: "ok"}, nil
	})
	t.Cleanup(srv.Close)
	history := []llm.Message{{Role: llm.RoleUser, Content: "q1"},
		{Role: llm.RoleAssistant, Content: "Adding.", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "add", Args: json.RawMessage(`{"a":1}`)}}},
		{Role: llm.RoleTool, ToolCallID: "c1", ToolName: "add", Content: "3"},
		{Role: llm.RoleAssistant, Content: "It is 3."}}
	a := New(Options{MCPURL: m.URL, Log: servicetest.Logger(t)})
	for name, p := range remotes(srv) {
		t.Run(name, func(t *testing.T) {
			rec := &recorder{}
			out, err := a.Run(context.Background(), &turn.Turn{Question: "q2", History: history, Model: "m", Remote: p, MCPToken: token, Emit: rec.emit})
			if err != nil || out.Finish != agent.FinishStop {
				t.Fatalf("%+v %v", out, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 3 || got[0].Content != "q1" || got[1].Role != llm.RoleAssistant || got[2].Content != "q2" ||
				!strings.Contains(got[1].Content, `[called tool add with {"a":1}]`) || !strings.Contains(got[1].Content, "[tool add returned: 3]") ||
				!strings.HasSuffix(got[1].Content, "It is 3.") {
				t.Fatalf("replayed %+v", got)
			}
		})
	}
}

func TestBaseProviderCannotReachMCP(t *testing.T) {
	m := startMCP(t)
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL + "/mcp"
	closed.Close()
	cases := []struct{ name, url, token string }{
		{"connection refused", closedURL, token},
		{"token refused", m.URL, "wrong"},
	}
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		return scripted.Step{}, fmt.Errorf("the script must not run when the MCP server is unreachable")
	})
	t.Cleanup(srv.Close)
	for _, tc := range cases {
		for name, p := range remotes(srv) {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				rec := &recorder{}
				a := New(Options{MCPURL: tc.url, Log: servicetest.Logger(t)})
				out, err := a.Run(context.Background(), &turn.Turn{Question: "q", Model: "m", Remote: p, MCPToken: tc.token, Emit: rec.emit})
				if err != nil {
					t.Fatal(err)
				}
				errs := rec.of(agent.EventError)
				if out.Finish != agent.FinishError || len(errs) != 1 || !strings.Contains(errs[0].Message, "could not reach Mirobody's MCP endpoint "+tc.url) ||
					!strings.Contains(errs[0].Message, "MCP_PUBLIC_URL") || strings.Contains(errs[0].Message, tc.token) {
					t.Fatalf("finish %q, errors %+v", out.Finish, errs)
				}
				if len(out.Messages) != 1 || out.Messages[0].Content != "q" {
					t.Fatalf("messages %+v", out.Messages)
				}
			})
		}
	}
	if errs := srv.Errors(); len(errs) > 0 {
		t.Fatal(errs)
	}
}

func TestBaseNeedsTokenAndRemote(t *testing.T) {
	srv := scripted.New(scripted.Sequence())
	t.Cleanup(srv.Close)
	a := New(Options{MCPURL: "http://127.0.0.1:1/mcp", Log: servicetest.Logger(t)})
	p := remotes(srv)["anthropic"]
	for _, tt := range []*turn.Turn{{Question: "q", Remote: p}, {Question: "q", MCPToken: token}} {
		if _, err := a.Run(context.Background(), tt); err == nil {
			t.Errorf("turn %+v started", tt)
		}
	}
}
