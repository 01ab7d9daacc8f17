package stack

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
)

// baseScript is the provider side of a Base turn: it checks that it was
// handed a scoped token (not the user's key) and the BASE tool list, calls
// tools over /mcp, then answers. A Deep turn in the same session checks
// that the Base turn's history replays.
type baseScript struct {
	accountID, userKey string
	mu                 sync.Mutex
	tokens             []string
}

func (b *baseScript) respond(r *scripted.Received) (scripted.Step, error) {
	if r.MCP == nil {
		// The follow-up Deep turn sees the Base turn's tool steps.
		var add, result bool
		for _, m := range r.Messages {
			for _, tc := range m.ToolCalls {
				add = add || (tc.Name == "add" && string(tc.Args) == `{"a":2,"b":3}`)
			}
			result = result || (m.Role == "tool" && m.Content == "5")
		}
		if err := expect(add && result && r.LastUser() == "And now?", "deep turn history %+v", r.Messages); err != nil {
			return scripted.Step{}, err
		}
		return scripted.Step{Text: "Still 5."}, nil
	}
	auth := r.MCP.Authorization
	tok, _ := strings.CutPrefix(auth, "Bearer ")
	if strings.Contains(auth, b.userKey) || strings.Count(tok, ".") != 2 || r.MCP.URL == "" {
		return scripted.Step{}, fmt.Errorf("the provider was handed %q for %s, want a JWT", auth, r.MCP.URL)
	}
	for k, v := range r.Header {
		if strings.Contains(strings.Join(v, " "), b.userKey) {
			return scripted.Step{}, fmt.Errorf("the user's key reached the provider in header %s", k)
		}
	}
	switch r.StepsSinceUser() {
	case 0:
		b.mu.Lock()
		b.tokens = append(b.tokens, tok)
		b.mu.Unlock()
		tools := slices.Sorted(slices.Values(r.Tools))
		if !slices.Equal(tools, []string{"add", "whoami"}) {
			return scripted.Step{}, fmt.Errorf("the provider listed %v, want BASE visibility [add whoami]", tools)
		}
		return scripted.Step{Text: "Let me check.", Calls: []scripted.Call{
			{Name: "whoami", Args: `{}`}, {Name: "add", Args: `{"a":2,"b":3}`}, {Name: "secret", Args: `{}`}}}, nil
	case 1:
		res := r.ToolResults()
		if err := expect(len(res) == 3 && res[0].Content == "account "+b.accountID && res[1].Content == "5" && !res[1].IsError &&
			res[2].IsError && !strings.Contains(res[2].Content, "leaked"), "tool results %+v", res); err != nil {
			return scripted.Step{}, err
		}
		return scripted.Step{Text: "Done: 5."}, nil
	}
	return scripted.Step{}, fmt.Errorf("unexpected step %d", r.StepsSinceUser())
}

// jwtClaims decodes a JWT's payload without verifying it (the gateway
// verifies; the test reads what was promised).
func jwtClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	must(t, err)
	var c map[string]any
	must(t, json.Unmarshal(b, &c))
	return c
}

// mcpSession connects to /mcp with a bearer token.
func mcpSession(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+token)
		return http.DefaultTransport.RoundTrip(r)
	})}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stack-test", Version: "1.0.0"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	must(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestBaseAgentTurn runs the whole Base path: chat with agent base → the
// gateway mints a scoped JWT → agent-svc → the scripted provider, which as
// a real MCP client lists and calls tools on our /mcp with that JWT →
// registry with BASE visibility → tool_call, tool_result, text and end.
func TestBaseAgentTurn(t *testing.T) {
	script := &baseScript{}
	srv := scripted.New(script.respond)
	t.Cleanup(srv.Close)
	addr := servicetest.FreeAddr(t)
	st := startChatStack(t, srv, func(c *conf.Config) {
		c.HTTPAddr, c.MCPPublicURL = addr, "http://"+addr
		c.ProvidersBase = map[string]conf.Provider{
			"an": {Type: "anthropic", Model: "claude-test", BaseURL: srv.AnthropicBaseURL()},
			"oa": {Type: "openai-responses", Model: "gpt-test", BaseURL: srv.OpenAIBaseURL()},
		}
		// The whitelist drops big and the built-ins; the blacklist wins
		// over the whitelist for secret.
		c.AllowedToolsBase = []string{"whoami", "add", "secret"}
		c.DisallowedToolsBase = []string{"secret"}
	})
	script.accountID, script.userKey = st.AccountID, st.Key
	mcpURL := st.URL + "/mcp"
	for _, provider := range []string{"oa", "an"} {
		t.Run(provider, func(t *testing.T) {
			start := time.Now()
			evs := st.chat(t, map[string]any{"question": "What is 2+3?", "agent": "base", "provider": provider})
			if errs := srv.Errors(); len(errs) > 0 {
				t.Fatalf("the scripted provider saw unexpected requests: %v", errs)
			}
			if len(evs) < 2 || evs[0].Type != agent.EventStart || evs[0].SessionID == "" || evs[len(evs)-1].FinishReason != agent.FinishStop {
				t.Fatalf("events %+v", evs)
			}
			calls, results := ofType(evs, agent.EventToolCall), ofType(evs, agent.EventToolResult)
			if len(calls) != 3 || calls[1].Name != "add" || string(calls[1].Args) != `{"a":2,"b":3}` || len(results) != 3 {
				t.Fatalf("tool calls %+v results %+v", calls, results)
			}
			for i, want := range []string{agent.StatusOK, agent.StatusOK, agent.StatusError} {
				if results[i].ToolCallID != calls[i].ID || results[i].Status != want {
					t.Errorf("result %d = %+v, want %s for %s", i, results[i], want, calls[i].Name)
				}
			}
			t.Logf("secret called with the Base token: %s", results[2].Content)
			if results[1].Content != "5" || strings.Contains(results[2].Content, "leaked") {
				t.Errorf("results %+v", results)
			}
			text := ""
			for _, e := range ofType(evs, agent.EventText) {
				text += e.Text
			}
			if text != "Let me check.Done: 5." || len(ofType(evs, agent.EventUsage)) != 1 {
				t.Errorf("text %q, events %+v", text, evs)
			}

			// The token: aud our /mcp, agent base, bound to the account and
			// the session, at most 10 minutes.
			script.mu.Lock()
			tok := script.tokens[len(script.tokens)-1]
			script.mu.Unlock()
			c := jwtClaims(t, tok)
			exp, iat := c["exp"].(float64), c["iat"].(float64)
			if c["aud"] != mcpURL && !slices.Contains(toStrings(c["aud"]), mcpURL) || c["agent"] != "base" || c["sub"] != st.AccountID ||
				c["sid"] != evs[0].SessionID || c["scope"] != "mcp" || exp-iat > 600 || time.Unix(int64(exp), 0).Before(start) {
				t.Fatalf("token claims %v", c)
			}

			// The turn has ended, so its token is refused (issue 15,
			// finding 6); during the turn the provider saw BASE
			// visibility (above), while a plain API key sees the full
			// registry.
			if code, out := callMyAccount(t, st.URL, "Authorization", "Bearer "+tok); code != http.StatusUnauthorized {
				t.Errorf("tools/call with the Base token after its turn: %d %s", code, out)
			}
			withKey := mcpSession(t, mcpURL, st.Key)
			ctx := context.Background()
			res, err := withKey.ListTools(ctx, nil)
			must(t, err)
			var names []string
			for _, tl := range res.Tools {
				names = append(names, tl.Name)
			}
			if !slices.Contains(names, "secret") || !slices.Contains(names, "big") {
				t.Errorf("tools/list with an API key: %v", names)
			}
			called, err := withKey.CallTool(ctx, &mcp.CallToolParams{Name: "secret", Arguments: map[string]any{}})
			if err != nil || called.IsError || len(called.Content) == 0 || called.Content[0].(*mcp.TextContent).Text != "leaked" {
				t.Errorf("tools/call secret with an API key: %+v %v", called, err)
			}

			// The turn is saved like a Deep one, and a Deep turn in the
			// same session replays its tool steps.
			code, body := httpGet(t, st.URL+"/api/sessions/"+evs[0].SessionID, st.Key)
			var got sessions.SessionGetResponse
			if code != http.StatusOK || json.Unmarshal(body, &got) != nil || len(got.Turns) != 1 || got.Turns[0].Answer != "Done: 5." {
				t.Fatalf("GET session: %d %s", code, body)
			}
			evs = st.chat(t, map[string]any{"question": "And now?", "agent": "deep", "provider": "oa", "session_id": evs[0].SessionID})
			if end := evs[len(evs)-1]; end.FinishReason != agent.FinishStop {
				t.Fatalf("deep follow-up %+v; provider errors %v", evs, srv.Errors())
			}
		})
	}
}

func toStrings(v any) []string {
	var out []string
	if xs, ok := v.([]any); ok {
		for _, x := range xs {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// TestBaseScriptedDev runs a Base turn as `mirobody dev` with
// PROVIDER=scripted does: the in-process provider reaches the loopback
// MCP_PUBLIC_URL and lists the tools with the turn's token.
func TestBaseScriptedDev(t *testing.T) {
	srv := scripted.New(scripted.Sequence())
	t.Cleanup(srv.Close)
	addr := servicetest.FreeAddr(t)
	st := startChatStack(t, srv, func(c *conf.Config) {
		c.Provider, c.HTTPAddr, c.MCPPublicURL = "scripted", addr, "http://"+addr
		c.DisallowedToolsBase = []string{"secret"}
	})
	evs := st.chat(t, map[string]any{"question": "show me", "agent": "Baseline"})
	text := ""
	for _, e := range ofType(evs, agent.EventText) {
		text += e.Text
	}
	if evs[len(evs)-1].FinishReason != agent.FinishStop || !strings.Contains(text, "Base agent") || !strings.Contains(text, "whoami") || strings.Contains(text, "secret") {
		t.Fatalf("events %+v", evs)
	}
}
