package stack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentsvc "github.com/mirobody/mirobody-go/agent-svc"
	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/gateway"
	registrysvc "github.com/mirobody/mirobody-go/registry-svc"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

type chatStack struct {
	URL, Key, AccountID string
	NATS                string
	cfg                 *conf.Config
}

// startChatStack runs the four services with the scripted provider behind
// both wire formats, as providers "oa" (openai) and "an" (anthropic).
func startChatStack(t *testing.T, srv *scripted.Server, tune func(*conf.Config)) *chatStack {
	t.Helper()
	natsURL := servicetest.NATS(t)
	db := servicetest.Postgres(t, nil)
	log := servicetest.Logger(t)
	cfg := testConfig(t, natsURL, db.DSN)
	tools, err := filepath.Abs("testdata/chat-tools")
	must(t, err)
	skills, err := filepath.Abs("../../skills")
	must(t, err)
	cfg.MCPToolDirs = []string{tools, "builtin"}
	cfg.SkillDirs = []string{skills}
	cfg.DisallowedToolsDeep = []string{"secret"}
	cfg.ProvidersDeep = map[string]conf.Provider{
		"an": {Type: "anthropic", Model: "claude-test", BaseURL: srv.AnthropicBaseURL()},
		"oa": {Type: "openai", Model: "gpt-test", BaseURL: srv.OpenAIBaseURL()},
	}
	cfg.HeartbeatMS = 200
	if tune != nil {
		tune(cfg)
	}
	gw := gateway.New(gateway.Options{Config: cfg, Log: log})
	startGroup(t, vfssvc.New(vfssvc.Options{Config: cfg, Log: log}), registrysvc.New(registrysvc.Options{Config: cfg, Log: log}),
		agentsvc.New(agentsvc.Options{Config: cfg, Log: log}), gw)
	ctx := context.Background()
	accts := accounts.NewAccounts(servicetest.Client(t, natsURL))
	acct, err := accts.Create(ctx, &accounts.AccountCreateRequest{Email: "chat@example.com"})
	must(t, err)
	key, err := accts.CreateKey(ctx, &accounts.KeyCreateRequest{AccountID: acct.ID, Name: "chat"})
	must(t, err)
	return &chatStack{URL: "http://" + gw.Addr(), Key: key.Key, AccountID: acct.ID, NATS: natsURL, cfg: cfg}
}

// chat posts one turn and returns its events.
func (st *chatStack) chat(t *testing.T, body map[string]any) []agent.Event {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, st.URL+"/api/chat", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+st.Key)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("POST /api/chat: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	var events []agent.Event
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var ev agent.Event
			must(t, json.Unmarshal([]byte(data), &ev))
			events = append(events, ev)
		}
	}
	return events
}

func ofType(evs []agent.Event, typ string) []agent.Event {
	var out []agent.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func expect(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf(format, args...)
}

// fullTurn is the scripted conversation of TestChatFullTurn; each step
// checks what the agent sent.
func fullTurn(accountID string) scripted.Responder {
	return func(r *scripted.Received) (scripted.Step, error) {
		if r.LastUser() == "Summarize the skills folder." {
			// The task subagent: its own context, no task tool.
			if err := expect(len(r.Messages) == 1 && !r.HasTool("task") && r.HasTool("read_file"), "subagent request %+v", r.Tools); err != nil {
				return scripted.Step{}, err
			}
			return scripted.Step{Text: "subagent report: one skill"}, nil
		}
		res := r.ToolResults()
		switch r.StepsSinceUser() {
		case 0:
			for _, name := range []string{"whoami", "add", "write_todos", "ls", "read_file", "write_file", "edit_file", "glob", "grep", "task", "js_eval"} {
				if !r.HasTool(name) {
					return scripted.Step{}, fmt.Errorf("tool %s not offered: %v", name, r.Tools)
				}
			}
			if r.HasTool("secret") {
				return scripted.Step{}, fmt.Errorf("hidden tool offered")
			}
			if !strings.Contains(r.System, "lab-results-review") || !strings.Contains(r.System, "lab results") {
				return scripted.Step{}, fmt.Errorf("system prompt lacks the skills: %s", r.System)
			}
			return scripted.Step{Text: "Planning.", Calls: []scripted.Call{
				{Name: "write_todos", Args: `{"todos":[{"content":"look around","status":"in_progress"},{"content":"answer","status":"pending"}]}`},
				{Name: "whoami", Args: `{}`},
				{Name: "write_file", Args: `{"file_path":"/notes/a.md","content":"hello\nworld\n"}`},
			}}, nil
		case 1:
			if err := expect(len(res) == 3 && strings.Contains(res[0].Content, "Updated the todo list") && res[1].Content == "account "+accountID &&
				strings.HasPrefix(res[2].Content, "Wrote /notes/a.md"), "step 1 results %+v", res); err != nil {
				return scripted.Step{}, err
			}
			return scripted.Step{Calls: []scripted.Call{
				{Name: "read_file", Args: `{"file_path":"/notes/a.md","offset":1,"limit":1}`},
				{Name: "task", Args: `{"description":"Summarize the skills folder.","subagent_type":"general-purpose"}`},
				{Name: "read_file", Args: `{"file_path":"/skills/lab-results-review/SKILL.md","limit":3}`},
			}}, nil
		case 2:
			if err := expect(len(res) == 3 && res[0].Content == "     2\tworld\n" && res[1].Content == "subagent report: one skill" &&
				strings.Contains(res[2].Content, "name: lab-results-review"), "step 2 results %+v", res); err != nil {
				return scripted.Step{}, err
			}
			code := `const [a, b] = await Promise.all([tools.add({a: 1, b: 2}), tools.add({a: 3, b: 4})]); let s = 0; for (const x of [a, b]) s += x; console.log("parts", a, b); return s`
			args, _ := json.Marshal(map[string]string{"code": code})
			return scripted.Step{Calls: []scripted.Call{{Name: "js_eval", Args: string(args)}, {Name: "secret", Args: `{}`}}}, nil
		case 3:
			if err := expect(len(res) == 2 && strings.Contains(res[0].Content, "parts 3 7") && strings.Contains(res[0].Content, "=> 10") &&
				res[1].IsError == (r.Format == scripted.FormatAnthropic) && strings.Contains(res[1].Content, "not available"), "step 3 results %+v", res); err != nil {
				return scripted.Step{}, err
			}
			return scripted.Step{Text: "All done: 10."}, nil
		}
		return scripted.Step{}, fmt.Errorf("unexpected step %d", r.StepsSinceUser())
	}
}

func TestChatFullTurn(t *testing.T) {
	var accountID string
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) { return fullTurn(accountID)(r) })
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, nil)
	accountID = st.AccountID
	for _, provider := range []string{"oa", "an"} {
		t.Run(provider, func(t *testing.T) {
			evs := st.chat(t, map[string]any{"question": "Do the full turn", "provider": provider, "agent": "Deep", "unknown_field": 1})
			if errs := srv.Errors(); len(errs) > 0 {
				t.Fatalf("the scripted provider saw unexpected requests: %v", errs)
			}
			if len(evs) < 2 || evs[0].Type != agent.EventStart || evs[0].SessionID == "" || evs[len(evs)-1].Type != agent.EventEnd {
				t.Fatalf("events do not start with start and end with end: %+v", evs)
			}
			if end := evs[len(evs)-1]; end.FinishReason != agent.FinishStop {
				t.Fatalf("finish %q; events %+v", end.FinishReason, evs)
			}
			if todos := ofType(evs, agent.EventTodos); len(todos) != 1 || len(todos[0].Items) != 2 {
				t.Errorf("todos events %+v", todos)
			}
			calls, results := ofType(evs, agent.EventToolCall), ofType(evs, agent.EventToolResult)
			if len(calls) != 8 || len(results) != 8 {
				t.Errorf("%d tool calls, %d results; want 8 each", len(calls), len(results))
			}
			for _, c := range calls {
				if c.Name != "secret" {
					continue
				}
				for _, r := range results {
					if r.ToolCallID == c.ID && (r.Status != agent.StatusError || r.ErrorKind != "not_found") {
						t.Errorf("hidden tool call result %+v", r)
					}
				}
			}
			text := ""
			for _, e := range ofType(evs, agent.EventText) {
				text += e.Text
			}
			if text != "Planning.All done: 10." {
				t.Errorf("text %q", text)
			}
			if len(ofType(evs, agent.EventUsage)) != 4 {
				t.Errorf("usage events %+v", ofType(evs, agent.EventUsage))
			}
			code, body := httpGet(t, st.URL+"/api/sessions/"+evs[0].SessionID, st.Key)
			var got sessions.SessionGetResponse
			if code != http.StatusOK || json.Unmarshal(body, &got) != nil || len(got.Turns) != 1 || got.Turns[0].Answer != "All done: 10." {
				t.Fatalf("GET session: %d %s", code, body)
			}
		})
	}
	code, body := httpGet(t, st.URL+"/api/sessions?limit=1", st.Key)
	var page sessions.SessionListResponse
	if code != http.StatusOK || json.Unmarshal(body, &page) != nil || len(page.Sessions) != 1 || page.NextCursor == "" {
		t.Fatalf("GET sessions: %d %s", code, body)
	}
	_ = time.Second
}
