package stack

import (
	"cmp"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
)

// TestToolSessionID pins what a tool sees as user_info.session_id
// (gateway/design.md "Identity"): the chat session for a Deep and for a
// Base turn alike (Base reaches /mcp with a per-turn token whose sid claim
// names the chat session, not its own MCP session), the legacy
// Mcp-Session-Id for a plain MCP client, and nothing for a client without
// a session.
func TestToolSessionID(t *testing.T) {
	// Both agents call session_of once, then answer.
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		if r.StepsSinceUser() == 0 {
			return scripted.Step{Calls: []scripted.Call{{Name: "session_of", Args: `{}`}}}, nil
		}
		return scripted.Step{Text: "done"}, nil
	})
	t.Cleanup(srv.Close)
	tools, err := filepath.Abs("testdata/session-tools")
	must(t, err)
	addr := servicetest.FreeAddr(t)
	st := startChatStack(t, srv, func(c *conf.Config) {
		c.HTTPAddr, c.MCPPublicURL = addr, "http://"+addr
		c.MCPToolDirs = append(c.MCPToolDirs, tools)
		c.ProvidersBase = map[string]conf.Provider{"oa": {Type: "openai-responses", Model: "gpt-test", BaseURL: srv.OpenAIBaseURL()}}
	})
	sessionOf := func(t *testing.T, evs []agent.Event) string {
		t.Helper()
		res := ofType(evs, agent.EventToolResult)
		if len(res) != 1 || res[0].Status != agent.StatusOK {
			t.Fatalf("tool results %+v; provider errors %v", res, srv.Errors())
		}
		return res[0].Content
	}
	for _, name := range []string{"deep", "base"} {
		t.Run(name, func(t *testing.T) {
			for _, session := range []string{"", "chat-" + name} {
				body := map[string]any{"question": "Which session?", "agent": name, "provider": "oa"}
				if session != "" {
					body["session_id"] = session
				}
				evs := st.chat(t, body)
				if len(evs) == 0 || evs[0].SessionID == "" || (session != "" && evs[0].SessionID != session) {
					t.Fatalf("events %+v", evs)
				}
				if got := sessionOf(t, evs); got != evs[0].SessionID {
					t.Errorf("%s turn in session %q: the tool saw session_id %q, want the chat session", name, evs[0].SessionID, got)
				}
			}
		})
	}

	// A plain client: the go-sdk speaks the sessionless modern era, raw
	// requests the legacy one with and without a session.
	mcpURL := st.URL + "/mcp"
	post := func(t *testing.T, body string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, mcpURL, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+st.Key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		must(t, err)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST /mcp %s: %d %s", body, resp.StatusCode, b)
		}
		return resp, string(b)
	}
	const callBody = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"session_of","arguments":{}}}`
	t.Run("plain MCP client, legacy session", func(t *testing.T) {
		resp, _ := post(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		sid := resp.Header.Get("Mcp-Session-Id")
		if sid == "" {
			t.Fatal("no Mcp-Session-Id after initialize")
		}
		if _, b := post(t, callBody, "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-06-18"); !strings.Contains(b, `"text":"`+sid+`"`) {
			t.Errorf("tools/call in session %s: %s, want the MCP session as session_id", sid, b)
		}
	})
	t.Run("plain MCP client, no session", func(t *testing.T) {
		if _, b := post(t, callBody); !strings.Contains(b, `"text":"none"`) {
			t.Errorf("tools/call without a session: %s, want no session_id", b)
		}
		cs := mcpSession(t, mcpURL, st.Key)
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "session_of", Arguments: map[string]any{}})
		if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != cmp.Or(cs.ID(), "none") {
			t.Errorf("go-sdk client (session %q): %+v %v", cs.ID(), res, err)
		}
	})
}
