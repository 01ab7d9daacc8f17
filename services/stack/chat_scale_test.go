package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

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
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

type runResult struct {
	ack    *agent.StartResponse
	finish string
	err    error
	done   time.Time
}

// TestChatTwoInstances runs two agent-svc replicas in one queue group: 20
// concurrent turns complete on both, and cutting one off mid-turn loses
// none: its turns are taken over by the other (issue 16; before durable
// runs they failed within the heartbeat window).
func TestChatTwoInstances(t *testing.T) {
	var mu sync.Mutex
	slow := false
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		mu.Lock()
		delay := map[bool]time.Duration{true: 150 * time.Millisecond}[slow]
		mu.Unlock()
		if r.StepsSinceUser() == 0 {
			return scripted.Step{Delay: delay, Calls: []scripted.Call{{Name: "write_todos", Args: `{"todos":[{"content":"x","status":"completed"}]}`}}}, nil
		}
		return scripted.Step{Delay: delay, Text: "done " + r.LastUser()}, nil
	})
	t.Cleanup(srv.Close)
	natsURL := servicetest.NATS(t)
	db := servicetest.Postgres(t, nil)
	log := servicetest.Logger(t)
	cfg := testConfig(t, natsURL, db.DSN)
	cfg.MCPToolDirs = []string{"builtin"}
	cfg.ProvidersDeep = map[string]conf.Provider{"oa": {Type: "openai", Model: "m", BaseURL: srv.OpenAIBaseURL()}}
	cfg.HeartbeatMS = 250
	// One account drives every turn here, more at once than AGENT_MAX_TURNS_PER_ACCOUNT allows.
	cfg.MaxTurnsPerAccount = 64
	startGroup(t, vfssvc.New(vfssvc.Options{Config: cfg, Log: log}), registrysvc.New(registrysvc.Options{Config: cfg, Log: log}),
		agentsvc.New(agentsvc.Options{Config: cfg, Log: log.With("replica", "a")}))
	proxy := servicetest.NewProxy(t, natsURL[len("nats://"):])
	cfgB := *cfg
	cfgB.NATSURL = proxy.URL()
	b := agentsvc.New(agentsvc.Options{Config: &cfgB, Log: log.With("replica", "b")})
	gb := svc.NewGroup(svc.Options{Services: []svc.Service{b}, Log: log, Grace: time.Second})
	must(t, gb.Start(context.Background()))
	t.Cleanup(func() { _ = gb.Stop(context.Background()) })

	wc := servicetest.Client(t, natsURL)
	acct, err := accounts.NewAccounts(wc).Create(context.Background(), &accounts.AccountCreateRequest{Email: "scale@example.com"})
	must(t, err)
	client := agent.NewClient(wc)
	runAll := func(n int, started chan<- struct{}) []runResult {
		out := make([]runResult, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				var finish string
				ack, err := client.Run(ctx, &agent.StartRequest{RunID: uuid.NewString(), AccountID: acct.ID, Question: fmt.Sprintf("turn %d", i), Provider: "oa"},
					func(ev agent.Event) {
						switch ev.Type {
						case agent.EventStart:
							if started != nil {
								started <- struct{}{}
							}
						case agent.EventEnd:
							finish = ev.FinishReason
						}
					})
				out[i] = runResult{ack: ack, finish: finish, err: err, done: time.Now()}
			}()
		}
		wg.Wait()
		return out
	}

	res := runAll(20, nil)
	perInstance := map[string]int{}
	for i, r := range res {
		if r.err != nil || r.finish != agent.FinishStop {
			t.Fatalf("turn %d: finish %q err %v", i, r.finish, r.err)
		}
		perInstance[r.ack.Instance]++
	}
	if len(perInstance) != 2 {
		t.Fatalf("turns per instance %v, want both replicas used", perInstance)
	}

	mu.Lock()
	slow = true
	mu.Unlock()
	started := make(chan struct{}, 16)
	killedAt := make(chan time.Time, 1)
	go func() {
		for range 16 {
			<-started
		}
		killedAt <- time.Now()
		proxy.Kill()
	}()
	res = runAll(16, started)
	<-killedAt
	for i, r := range res {
		if r.err != nil || r.finish != agent.FinishStop {
			t.Errorf("turn %d (replica %s): finish %q err %v", i, r.ack.Instance, r.finish, r.err)
		}
	}
}

// TestChatAgentLostOverSSE: when the only replica running a turn
// disappears, the gateway ends the SSE stream with an error and finish
// unavailable once a takeover is overdue, and the session shows the turn
// still running beside the file it wrote (issue 16: the session answered
// 404 while the file was committed). The run is durable: a replica that
// starts later takes it over, the turn completes without writing the file
// again, and GET /api/runs/{id}/stream with the last event id the client
// saw replays the rest.
func TestChatAgentLostOverSSE(t *testing.T) {
	asked := make(chan struct{}, 1)
	var mu sync.Mutex
	writes, answers := 0, 0
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		mu.Lock()
		defer mu.Unlock()
		if r.StepsSinceUser() == 0 {
			writes++
			return scripted.Step{Calls: []scripted.Call{{Name: "write_file", Args: `{"file_path":"/notes/lost.md","content":"written before the crash"}`}}}, nil
		}
		if answers++; answers == 1 {
			asked <- struct{}{}
			return scripted.Step{Delay: 2 * time.Second, Text: "never finished"}, nil
		}
		return scripted.Step{Text: "finished elsewhere"}, nil
	})
	t.Cleanup(srv.Close)
	natsURL := servicetest.NATS(t)
	db := servicetest.Postgres(t, nil)
	log := servicetest.Logger(t)
	cfg := testConfig(t, natsURL, db.DSN)
	cfg.MCPToolDirs = []string{"builtin"}
	cfg.ProvidersDeep = map[string]conf.Provider{"oa": {Type: "openai", Model: "m", BaseURL: srv.OpenAIBaseURL()}}
	cfg.HeartbeatMS = 100
	gw := gateway.New(gateway.Options{Config: cfg, Log: log})
	startGroup(t, vfssvc.New(vfssvc.Options{Config: cfg, Log: log}), registrysvc.New(registrysvc.Options{Config: cfg, Log: log}), gw)
	proxy := servicetest.NewProxy(t, natsURL[len("nats://"):])
	cfgA := *cfg
	cfgA.NATSURL = proxy.URL()
	ga := svc.NewGroup(svc.Options{Services: []svc.Service{agentsvc.New(agentsvc.Options{Config: &cfgA, Log: log})}, Log: log, Grace: time.Second})
	must(t, ga.Start(context.Background()))
	t.Cleanup(func() { _ = ga.Stop(context.Background()) })
	ctx := context.Background()
	accts := accounts.NewAccounts(servicetest.Client(t, natsURL))
	acct, err := accts.Create(ctx, &accounts.AccountCreateRequest{Email: "lost@example.com"})
	must(t, err)
	key, err := accts.CreateKey(ctx, &accounts.KeyCreateRequest{AccountID: acct.ID, Name: "k"})
	must(t, err)
	st := &chatStack{URL: "http://" + gw.Addr(), Key: key.Key}
	go func() {
		<-asked
		proxy.Kill()
	}()
	resp := st.postSSE(t, "/api/chat", `{"question": "write then die", "provider": "oa"}`, "")
	evs := readSSE(t, resp)
	errs := ofType(evs.events(), agent.EventError)
	if finishOf(evs.events()) != agent.FinishUnavailable || len(errs) != 1 || !strings.Contains(errs[0].Message, "stopped responding") {
		t.Fatalf("events %+v", evs)
	}
	start := evs[0].ev
	code, body := httpGet(t, st.URL+"/api/sessions/"+start.SessionID, st.Key)
	var got sessions.SessionGetResponse
	if code != http.StatusOK || json.Unmarshal(body, &got) != nil {
		t.Fatalf("GET /api/sessions/%s: %d %s", start.SessionID, code, body)
	}
	if len(got.Turns) != 1 || got.Turns[0].Question != "write then die" || got.Turns[0].Finish != sessions.FinishRunning || got.Turns[0].RunID != start.ID {
		t.Fatalf("the turn whose replica died is recorded as %+v", got.Turns)
	}
	fs := files.NewFS(servicetest.Client(t, natsURL))
	f, err := fs.Read(ctx, &files.ReadRequest{Scope: files.Scope{AccountID: acct.ID, SessionID: start.SessionID}, Path: "/notes/lost.md"})
	must(t, err)
	if !strings.Contains(f.Content, "written before the crash") {
		t.Fatalf("the turn's file holds %q", f.Content)
	}

	// Another account cannot follow the run.
	other := newAccountKey(ctx, t, natsURL, "other@example.com")
	if resp := st.getSSE(t, "/api/runs/"+start.ID+"/stream", other, ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another account's GET /api/runs/{id}/stream: %d", resp.StatusCode)
	}
	// A replica starts; it takes the run over, and the client follows it
	// from the last event it saw.
	b := svc.NewGroup(svc.Options{Services: []svc.Service{agentsvc.New(agentsvc.Options{Config: cfg, Log: log})}, Log: log, Grace: time.Second})
	must(t, b.Start(context.Background()))
	t.Cleanup(func() { _ = b.Stop(context.Background()) })
	last := evs.lastID()
	rest := readSSE(t, st.getSSE(t, "/api/runs/"+start.ID+"/stream", st.Key, fmt.Sprint(last)))
	if finishOf(rest.events()) != agent.FinishStop || !strings.Contains(textOf(rest.events()), "finished elsewhere") || rest[0].id != last+1 {
		t.Fatalf("the stream after event %d: %+v", last, rest)
	}
	for i := 1; i < len(rest); i++ {
		if rest[i].id != 0 && rest[i].id != rest[i-1].id+1 {
			t.Fatalf("the replayed stream skips from %d to %d", rest[i-1].id, rest[i].id)
		}
	}
	// The whole stream again, from storage alone.
	all := readSSE(t, st.getSSE(t, "/api/runs/"+start.ID+"/stream", st.Key, ""))
	if all[0].ev.Type != agent.EventStart || finishOf(all.events()) != agent.FinishStop || all[len(all)-1].id != rest[len(rest)-1].id {
		t.Fatalf("the replay from the start: %+v", all)
	}
	code, body = httpGet(t, st.URL+"/api/sessions/"+start.SessionID, st.Key)
	if code != http.StatusOK || json.Unmarshal(body, &got) != nil || len(got.Turns) != 1 || got.Turns[0].Finish != agent.FinishStop || got.Turns[0].Answer != "finished elsewhere" {
		t.Fatalf("the taken-over turn is recorded as %d %s", code, body)
	}
	f, err = fs.Read(ctx, &files.ReadRequest{Scope: files.Scope{AccountID: acct.ID, SessionID: start.SessionID}, Path: "/notes/lost.md"})
	must(t, err)
	mu.Lock()
	defer mu.Unlock()
	if f.Version != 1 || writes != 1 {
		t.Fatalf("the file is at version %d after %d write steps, want 1 and 1", f.Version, writes)
	}
}
