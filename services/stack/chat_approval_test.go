package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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
	"github.com/mirobody/mirobody-go/services/svc"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	"github.com/mirobody/mirobody-go/services/wire"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

// approvalStack is every service of the stack as one group that a test
// stops and starts again on the same NATS and Postgres.
type approvalStack struct {
	cfg *conf.Config
	g   *svc.Group
	gw  *gateway.Service
}

func (a *approvalStack) start(t *testing.T) {
	t.Helper()
	log := servicetest.Logger(t)
	a.gw = gateway.New(gateway.Options{Config: a.cfg, Log: log})
	a.g = svc.NewGroup(svc.Options{Services: []svc.Service{vfssvc.New(vfssvc.Options{Config: a.cfg, Log: log}),
		registrysvc.New(registrysvc.Options{Config: a.cfg, Log: log}), agentsvc.New(agentsvc.Options{Config: a.cfg, Log: log}), a.gw},
		Log: log, Grace: 5 * time.Second})
	must(t, a.g.Start(context.Background()))
}

func (a *approvalStack) stop() {
	if a.g != nil {
		_ = a.g.Stop(context.Background())
		a.g = nil
	}
}

// TestRunApproval: with INTERRUPT_ON_DEEP naming write_file, a turn's
// write_file pauses the run with an approval event (tool, arguments, call
// id) that ends the stream; the turn shows running and no file is written.
// The paused state lives in Postgres only: every service stops and new
// ones start, and POST /api/runs/{id}/approve then resumes the run, which
// GET /api/runs/{id}/stream follows to its end. Edit runs the call with
// the user's arguments; reject runs nothing, and the model sees the reason
// as the tool's result.
func TestRunApproval(t *testing.T) {
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		if r.StepsSinceUser() == 0 {
			return scripted.Step{Calls: []scripted.Call{{Name: "write_file", Args: `{"file_path":"/notes/a.md","content":"draft"}`}}}, nil
		}
		res := r.ToolResults()
		return scripted.Step{Text: "tool said: " + res[len(res)-1].Content}, nil
	})
	t.Cleanup(srv.Close)
	natsURL := servicetest.NATS(t)
	db := servicetest.Postgres(t, nil)
	cfg := testConfig(t, natsURL, db.DSN)
	cfg.MCPToolDirs = []string{"builtin"}
	cfg.ProvidersDeep = map[string]conf.Provider{"oa": {Type: "openai", Model: "m", BaseURL: srv.OpenAIBaseURL()}}
	cfg.HeartbeatMS = 100
	cfg.InterruptOnDeep = []string{"write_file"}
	stack := &approvalStack{cfg: cfg}
	stack.start(t)
	t.Cleanup(stack.stop)
	ctx := context.Background()
	nc := servicetest.Client(t, natsURL)
	accts := accounts.NewAccounts(nc)
	acct, err := accts.Create(ctx, &accounts.AccountCreateRequest{Email: "approve@example.com"})
	must(t, err)
	key, err := accts.CreateKey(ctx, &accounts.KeyCreateRequest{AccountID: acct.ID, Name: "k"})
	must(t, err)
	fs := files.NewFS(nc)

	cases := []struct {
		name     string
		restart  bool
		decision string
		// file is the content written, "" for none.
		file, answer string
	}{
		{"approve after a restart of every service", true, `{"decision":"approve"}`, "draft", "tool said: "},
		{"edit", false, `{"decision":"edit","arguments":{"file_path":"/notes/a.md","content":"edited"}}`, "edited", "tool said: "},
		{"reject", false, `{"decision":"reject","reason":"not now"}`, "", "tool said: The user rejected this tool call: not now"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &chatStack{URL: "http://" + stack.gw.Addr(), Key: key.Key}
			evs := readSSE(t, st.postSSE(t, "/api/chat", `{"question":"write it","provider":"oa"}`, ""))
			last := evs[len(evs)-1]
			start := evs[0].ev
			if last.ev.Type != agent.EventApproval || last.ev.Name != "write_file" || last.ev.ID == "" || !strings.Contains(string(last.ev.Args), "draft") {
				t.Fatalf("the paused stream: %+v", evs)
			}
			code, body := httpGet(t, st.URL+"/api/sessions/"+start.SessionID, st.Key)
			var got sessions.SessionGetResponse
			if code != http.StatusOK || json.Unmarshal(body, &got) != nil || len(got.Turns) != 1 || got.Turns[0].Finish != sessions.FinishRunning {
				t.Fatalf("the paused turn: %d %s", code, body)
			}
			scope := files.Scope{AccountID: acct.ID, SessionID: start.SessionID}
			if _, err := fs.Read(ctx, &files.ReadRequest{Scope: scope, Path: "/notes/a.md"}); !wire.IsCode(err, wire.NotFound) {
				t.Fatalf("a call waiting for approval ran: %v", err)
			}
			if tc.restart {
				stack.stop()
				stack.start(t)
				st.URL = "http://" + stack.gw.Addr()
			}
			resp := st.postSSE(t, "/api/runs/"+start.ID+"/approve", tc.decision, "")
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("approve: %s", resp.Status)
			}
			rest := readSSE(t, st.getSSE(t, "/api/runs/"+start.ID+"/stream", st.Key, fmt.Sprint(last.id)))
			if finishOf(rest.events()) != agent.FinishStop || !strings.HasPrefix(textOf(rest.events()), tc.answer) {
				t.Fatalf("after the decision: %+v", rest)
			}
			f, err := fs.Read(ctx, &files.ReadRequest{Scope: scope, Path: "/notes/a.md"})
			switch {
			case tc.file == "" && !wire.IsCode(err, wire.NotFound):
				t.Fatalf("a rejected call wrote the file: %v", err)
			case tc.file != "" && (err != nil || f.Content != tc.file || f.Version != 1):
				t.Fatalf("the file after the decision: %+v %v", f, err)
			}
			code, body = httpGet(t, st.URL+"/api/sessions/"+start.SessionID, st.Key)
			if code != http.StatusOK || json.Unmarshal(body, &got) != nil || len(got.Turns) != 1 || got.Turns[0].Finish != agent.FinishStop ||
				!strings.HasPrefix(got.Turns[0].Answer, tc.answer) {
				t.Fatalf("the turn after the decision: %d %s", code, body)
			}
			// A second decision finds nothing to decide.
			if resp := st.postSSE(t, "/api/runs/"+start.ID+"/approve", tc.decision, ""); resp.StatusCode != http.StatusConflict && resp.StatusCode != http.StatusPreconditionFailed {
				t.Fatalf("a second decision: %s", resp.Status)
			}
		})
	}

	t.Run("cancel while paused", func(t *testing.T) {
		st := &chatStack{URL: "http://" + stack.gw.Addr(), Key: key.Key}
		evs := readSSE(t, st.postSSE(t, "/api/chat", `{"question":"write it","provider":"oa"}`, ""))
		last, start := evs[len(evs)-1], evs[0].ev
		if last.ev.Type != agent.EventApproval {
			t.Fatalf("the paused stream: %+v", evs)
		}
		if resp := st.postSSE(t, "/api/runs/"+start.ID+"/cancel", "", ""); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("cancel: %s", resp.Status)
		}
		rest := readSSE(t, st.getSSE(t, "/api/runs/"+start.ID+"/stream", st.Key, fmt.Sprint(last.id)))
		if finishOf(rest.events()) != agent.FinishCancelled {
			t.Fatalf("after the cancel: %+v", rest)
		}
		code, body := httpGet(t, st.URL+"/api/sessions/"+start.SessionID, st.Key)
		var got sessions.SessionGetResponse
		if code != http.StatusOK || json.Unmarshal(body, &got) != nil || len(got.Turns) != 1 || got.Turns[0].Finish != agent.FinishCancelled {
			t.Fatalf("the cancelled paused turn: %d %s", code, body)
		}
	})
}
