package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
)

// askStack is a chat stack whose scripted model calls book_table, a
// Python tool that samples the model and then asks the user; the model's
// answer repeats the tool's result. greetings counts the samplings.
func askStack(t *testing.T) (st *chatStack, greetings *atomic.Int32) {
	t.Helper()
	srv, greetings := askProvider(t)
	tools, err := filepath.Abs("testdata/sample-tools")
	must(t, err)
	return startChatStack(t, srv, func(c *conf.Config) {
		c.MCPToolDirs = append(c.MCPToolDirs, tools)
		c.Provider = "oa"
	}), greetings
}

// askProvider is the scripted model of askStack.
func askProvider(t *testing.T) (*scripted.Server, *atomic.Int32) {
	greetings := &atomic.Int32{}
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		switch {
		case r.System == "You greet.":
			greetings.Add(1)
			return scripted.Step{Text: "hello"}, nil
		case r.StepsSinceUser() == 0:
			return scripted.Step{Calls: []scripted.Call{{Name: "book_table", Args: `{"restaurant":"Chez Go"}`}}}, nil
		}
		res := r.ToolResults()
		return scripted.Step{Text: "tool said: " + res[len(res)-1].Content}, nil
	})
	t.Cleanup(srv.Close)
	return srv, greetings
}

// TestDeepToolAsk: in a Deep turn of a client that can answer (can_ask),
// a tool's mirobody.elicit pauses the run with an ask event (the call id,
// the tool, the question and its schema) that ends the stream; POST
// /api/runs/{id}/answer resumes it, the tool runs again with the answer
// (and with its earlier sampling answer, so the model is sampled once),
// and GET /api/runs/{id}/stream follows the rest. An answer for another
// call, or an approval decision, is refused.
func TestDeepToolAsk(t *testing.T) {
	st, greetings := askStack(t)
	cases := []struct {
		name, answer, want string
	}{
		{"accept", `{"action":"accept","content":{"name":"Ada","people":3,"seating":"outside","vegetarian":true}}`,
			"tool said: booked Chez Go: Ada x3 outside vegetarian=True (hello)"},
		{"decline", `{"action":"decline"}`, "tool said: not booked: decline"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			greetings.Store(0)
			evs := readSSE(t, st.postSSE(t, "/api/chat", `{"question":"book it","agent":"deep","provider":"oa","can_ask":true}`, ""))
			last, start := evs[len(evs)-1], evs[0].ev
			var schema struct {
				Required []string `json:"required"`
			}
			if last.ev.Type != agent.EventAsk || last.ev.Name != "book_table" || last.ev.ID == "" || last.ev.Message != "How should we book Chez Go?" ||
				json.Unmarshal(last.ev.Schema, &schema) != nil || strings.Join(schema.Required, ",") != "name,people" {
				t.Fatalf("the paused stream: %+v", evs)
			}
			if len(ofType(evs.events(), agent.EventToolResult)) != 0 {
				t.Fatalf("a tool result before the answer: %+v", evs)
			}
			if resp := st.postSSE(t, "/api/runs/"+start.ID+"/answer", `{"tool_call_id":"other","action":"decline"}`, ""); resp.StatusCode != http.StatusPreconditionFailed {
				t.Errorf("an answer for another call: %s", resp.Status)
			}
			if resp := st.postSSE(t, "/api/runs/"+start.ID+"/approve", `{"decision":"approve"}`, ""); resp.StatusCode == http.StatusAccepted {
				t.Errorf("an approval of a question was accepted")
			}
			if resp := st.postSSE(t, "/api/runs/"+start.ID+"/answer", tc.answer, ""); resp.StatusCode != http.StatusAccepted {
				t.Fatalf("answer: %s", resp.Status)
			}
			rest := readSSE(t, st.getSSE(t, "/api/runs/"+start.ID+"/stream", st.Key, fmt.Sprint(last.id)))
			if finishOf(rest.events()) != agent.FinishStop || textOf(rest.events()) != tc.want {
				t.Fatalf("after the answer: %q %+v", textOf(rest.events()), rest)
			}
			if n := len(ofType(rest.events(), agent.EventToolCall)); n != 0 {
				t.Errorf("the call that asked was shown again (%d tool_call events)", n)
			}
			if n := greetings.Load(); n != 1 {
				t.Errorf("the tool sampled the model %d times, want once", n)
			}
		})
	}
}

// TestChatCLIAsk: `mirobody chat` asks a tool's question on the terminal,
// field by field (a bad value is asked again, empty takes the default),
// and the turn goes on with the answer.
func TestChatCLIAsk(t *testing.T) {
	st, _ := askStack(t)
	var out, errw strings.Builder
	err := runChat(context.Background(), []string{"--config", "testdata/empty.yaml", "--url", st.URL, "--key", st.Key, "--provider", "oa", "book"},
		strings.NewReader("a\nAda\nmany\n\noutside\nyes\n"), &out, &errw)
	want := "tool said: booked Chez Go: Ada x2 outside vegetarian=True (hello)"
	if err != nil || !strings.Contains(out.String(), "? book_table asks: How should we book Chez Go?") ||
		!strings.Contains(out.String(), "that is not a whole number") || !strings.Contains(out.String(), want) {
		t.Fatalf("err %v, output:\n%s\n%s", err, out.String(), errw.String())
	}
}

// TestDeepToolAskRestart: the question a paused run waits for lives in
// Postgres only: every service stops and new ones start, and the answer
// then resumes the run on the new agent replica, the tool getting it.
func TestDeepToolAskRestart(t *testing.T) {
	srv, _ := askProvider(t)
	natsURL := servicetest.NATS(t)
	db := servicetest.Postgres(t, nil)
	cfg := testConfig(t, natsURL, db.DSN)
	tools, err := filepath.Abs("testdata/sample-tools")
	must(t, err)
	cfg.MCPToolDirs = []string{tools, "builtin"}
	cfg.ProvidersDeep = map[string]conf.Provider{"oa": {Type: "openai", Model: "m", BaseURL: srv.OpenAIBaseURL()}}
	cfg.HeartbeatMS = 100
	stack := &approvalStack{cfg: cfg}
	stack.start(t)
	t.Cleanup(stack.stop)
	accts := accounts.NewAccounts(servicetest.Client(t, natsURL))
	acct, err := accts.Create(context.Background(), &accounts.AccountCreateRequest{Email: "ask@example.com"})
	must(t, err)
	key, err := accts.CreateKey(context.Background(), &accounts.KeyCreateRequest{AccountID: acct.ID, Name: "k"})
	must(t, err)
	st := &chatStack{URL: "http://" + stack.gw.Addr(), Key: key.Key}
	evs := readSSE(t, st.postSSE(t, "/api/chat", `{"question":"book it","provider":"oa","can_ask":true}`, ""))
	last, start := evs[len(evs)-1], evs[0].ev
	if last.ev.Type != agent.EventAsk {
		t.Fatalf("the paused stream: %+v", evs)
	}
	stack.stop()
	stack.start(t)
	st.URL = "http://" + stack.gw.Addr()
	if resp := st.postSSE(t, "/api/runs/"+start.ID+"/answer", `{"action":"accept","content":{"name":"Bo","people":1}}`, ""); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("answer: %s", resp.Status)
	}
	rest := readSSE(t, st.getSSE(t, "/api/runs/"+start.ID+"/stream", st.Key, fmt.Sprint(last.id)))
	if want := "tool said: booked Chez Go: Bo x1 any vegetarian=None (hello)"; finishOf(rest.events()) != agent.FinishStop || textOf(rest.events()) != want {
		t.Fatalf("after the answer: %q, want %q", textOf(rest.events()), want)
	}
}
