package stack

import (
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
)

func TestRenderChat(t *testing.T) {
	cases := []struct {
		name, stream, want, err string
		raw                     bool
	}{
		{"turn", `data: {"type":"start","id":"r","session_id":"s1"}

data: {"type":"reasoning","reasoning":"think"}
data: {"type":"reasoning","reasoning":"ing"}
data: {"type":"text","text":"Hel"}
data: {"type":"text","text":"lo"}
data: {"type":"tool_call","id":"c","name":"ls","args":{"path":"/"}}
data: {"type":"tool_result","tool_call_id":"c","content":"a\nb","status":"ok"}
data: {"type":"todos","items":[{"content":"x","status":"completed"},{"content":"y","status":"pending"}]}
data: {"type":"heartbeat"}
data: {"type":"tool_result","tool_call_id":"d","content":"nope","status":"error"}
data: {"type":"end","finish_reason":"stop"}
`, "session s1\n  (thinking) thinking\nHello\n→ ls {\"path\":\"/\"}\n← a b\ntodos:\n  [x] x\n  [ ] y\n✗ nope\n(stop)\n", "", false},
		{"arrows stay arrows", `data: {"type":"tool_call","id":"c","name":"js_eval","args":{"code":"[1].map((x) =\u003e x \u003c 2 \u0026\u0026 x)"}}
data: {"type":"end","finish_reason":"stop"}
`, "→ js_eval {\"code\":\"[1].map((x) => x < 2 && x)\"}\n(stop)\n", "", false},
		{name: "json lines unescaped", raw: true, stream: `data: {"type":"tool_result","tool_call_id":"c","content":"=\u003e 42","status":"ok"}
data: {"type":"end","finish_reason":"stop"}
`, want: "{\"content\":\"=> 42\",\"status\":\"ok\",\"tool_call_id\":\"c\",\"type\":\"tool_result\"}\n{\"finish_reason\":\"stop\",\"type\":\"end\"}\n"},
		{"error", `data: {"type":"error","message":"the model provider is unavailable"}
data: {"type":"end","finish_reason":"unavailable"}
`, "error: the model provider is unavailable\n(unavailable)\n", "unavailable", false},
		{"cut", `data: {"type":"text","text":"Hel"}
`, "Hel", "without an end event", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			err := renderChat(strings.NewReader(tc.stream), &out, tc.raw, nil)
			if out.String() != tc.want {
				t.Errorf("output\n%q\nwant\n%q", out.String(), tc.want)
			}
			if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("err %v, want %q", err, tc.err)
			}
		})
	}
}

// TestChatScriptedDev runs the turn `mirobody dev` shows with
// PROVIDER=scripted: the same code path as a real provider.
func TestChatScriptedDev(t *testing.T) {
	srv := scripted.New(scripted.Sequence())
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, func(c *conf.Config) { c.Provider = "scripted" })
	evs := st.chat(t, map[string]any{"question": "show me"})
	if finishOf(evs) != agent.FinishStop || len(ofType(evs, agent.EventToolCall)) != 5 || len(ofType(evs, agent.EventTodos)) != 2 ||
		!strings.Contains(textOf(evs), "42") {
		t.Fatalf("events %+v", evs)
	}
	for _, r := range ofType(evs, agent.EventToolResult) {
		if r.Status != agent.StatusOK {
			t.Fatalf("tool result %+v", r)
		}
	}
	// Every turn of a session works, not just the first: the REPL keeps
	// the session's bindings, and the demo once declared a const in it.
	var sessionID string
	if starts := ofType(evs, agent.EventStart); len(starts) == 1 {
		sessionID = starts[0].SessionID
	}
	for turn := 2; turn <= 3; turn++ {
		next := st.chat(t, map[string]any{"question": "and again", "session_id": sessionID})
		if finishOf(next) != agent.FinishStop || len(ofType(next, agent.EventToolResult)) != 5 {
			t.Fatalf("turn %d: events %+v", turn, next)
		}
		for _, r := range ofType(next, agent.EventToolResult) {
			if r.Status != agent.StatusOK {
				t.Fatalf("turn %d: tool result %+v", turn, r)
			}
		}
	}
	// The SSE vocabulary is pinned by a golden file: one data block a
	// line, with run and session ids blanked and heartbeats dropped. The
	// results of parallel tool calls arrive in any order, so a run of
	// tool_result events is sorted by call id; and text and reasoning
	// deltas are merged, as a run records the deltas that pile up while it
	// writes as one event (agent-svc/design.md "Durable runs").
	var b strings.Builder
	var results []agent.Event
	flush := func() {
		sort.Slice(results, func(i, j int) bool { return results[i].ToolCallID < results[j].ToolCallID })
		for _, e := range results {
			writeEvent(&b, e)
		}
		results = nil
	}
	var merged []agent.Event
	for _, e := range evs {
		if n := len(merged); n > 0 && e.Type == merged[n-1].Type && (e.Type == agent.EventText || e.Type == agent.EventReasoning) {
			merged[n-1].Text += e.Text
			merged[n-1].Reasoning += e.Reasoning
			continue
		}
		merged = append(merged, e)
	}
	for _, e := range merged {
		switch e.Type {
		case agent.EventHeartbeat:
			continue
		case agent.EventToolResult:
			results = append(results, e)
			continue
		case agent.EventStart:
			e.ID, e.SessionID = "<run>", "<session>"
		}
		flush()
		writeEvent(&b, e)
	}
	flush()
	golden := "testdata/chat_scripted.sse.golden"
	if *updateGolden {
		must(t, os.WriteFile(golden, []byte(b.String()), 0o644))
	}
	want, err := os.ReadFile(golden)
	must(t, err)
	if b.String() != string(want) {
		t.Fatalf("events differ from %s (run with -update-chat-golden to accept):\n%s", golden, b.String())
	}
}

func writeEvent(b *strings.Builder, e agent.Event) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(e)
}

var updateGolden = flag.Bool("update-chat-golden", false, "rewrite testdata/chat_scripted.sse.golden")

// TestChatRequestErrors: a turn that cannot start is an HTTP error that
// names the problem, not a stream.
func TestChatRequestErrors(t *testing.T) {
	srv := scripted.New(scripted.Sequence())
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, nil)
	cases := []struct {
		name string
		body string
		key  string
		code int
		msg  string
	}{
		{"no question", `{"session_id":"x"}`, st.Key, http.StatusBadRequest, "question is empty"},
		{"not JSON", `{`, st.Key, http.StatusBadRequest, "JSON object"},
		{"base agent without a provider", `{"question":"q","agent":"base"}`, st.Key, http.StatusPreconditionFailed, "no model provider is configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY"},
		{"base agent with a Deep provider", `{"question":"q","agent":"base","provider":"oa"}`, st.Key, http.StatusBadRequest, "unknown provider"},
		{"unknown provider", `{"question":"q","provider":"nope"}`, st.Key, http.StatusBadRequest, "unknown provider"},
		{"bad session id", `{"question":"q","session_id":"../x","provider":"oa"}`, st.Key, http.StatusBadRequest, "session_id must be"},
		{"no key", `{"question":"q"}`, "", http.StatusUnauthorized, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, st.URL+"/api/chat", strings.NewReader(tc.body))
			if tc.key != "" {
				req.Header.Set("Authorization", "Bearer "+tc.key)
			}
			resp, err := http.DefaultClient.Do(req)
			must(t, err)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.code || !strings.Contains(string(body), tc.msg) {
				t.Fatalf("%d %s, want %d with %q", resp.StatusCode, body, tc.code, tc.msg)
			}
		})
	}
}
