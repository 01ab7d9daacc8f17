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
	"github.com/mirobody/mirobody-go/services/wire"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

type runResult struct {
	ack    *agent.StartResponse
	finish string
	err    error
	done   time.Time
}

// TestChatTwoInstances runs two agent-svc replicas in one queue group: 20
// concurrent turns complete on both, and cutting one off mid-turn fails
// only its turns, within the heartbeat window.
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
	killed := <-killedAt
	lost, completed := 0, 0
	for i, r := range res {
		switch {
		case r.err == nil && r.finish == agent.FinishStop:
			completed++
		case wire.IsCode(r.err, wire.Unavailable):
			lost++
			if d := r.done.Sub(killed); d > 2*time.Second {
				t.Errorf("turn %d failed %v after the kill, want within the heartbeat window", i, d)
			}
		default:
			t.Errorf("turn %d: finish %q err %v", i, r.finish, r.err)
		}
	}
	// Both kinds must occur, and each replica's turns share one fate.
	fate := map[string]bool{}
	for _, r := range res {
		ok := r.err == nil
		if prev, seen := fate[r.ack.Instance]; seen && prev != ok {
			t.Errorf("replica %s has both completed and lost turns", r.ack.Instance)
		}
		fate[r.ack.Instance] = ok
	}
	if lost == 0 || completed == 0 {
		t.Fatalf("completed %d, lost %d: want the survivor's turns to complete and the killed replica's to fail", completed, lost)
	}
}

// TestChatAgentLostOverSSE: when the replica running a turn disappears,
// the gateway ends the SSE stream with an error and finish unavailable
// within the heartbeat window, and records the turn failed in its
// session: the session exists, shows the lost turn with the reason, and
// the file the turn wrote before the replica died is there too (issue 16:
// the session answered 404 while the file was committed).
func TestChatAgentLostOverSSE(t *testing.T) {
	asked := make(chan struct{}, 1)
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		if r.StepsSinceUser() == 0 {
			return scripted.Step{Calls: []scripted.Call{{Name: "write_file", Args: `{"file_path":"/notes/lost.md","content":"written before the crash"}`}}}, nil
		}
		asked <- struct{}{}
		return scripted.Step{Delay: 2 * time.Second, Text: "never finished"}, nil
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
	killedAt := make(chan time.Time, 1)
	go func() {
		<-asked
		killedAt <- time.Now()
		proxy.Kill()
	}()
	evs := st.chat(t, map[string]any{"question": "write then die", "provider": "oa"})
	killed := <-killedAt
	if d := time.Since(killed); d > 2*time.Second {
		t.Fatalf("the stream ended %v after the replica was lost", d)
	}
	errs := ofType(evs, agent.EventError)
	if finishOf(evs) != agent.FinishUnavailable || len(errs) != 1 || !strings.Contains(errs[0].Message, "stopped responding") {
		t.Fatalf("events %+v", evs)
	}

	code, body := httpGet(t, st.URL+"/api/sessions/"+evs[0].SessionID, st.Key)
	var got sessions.SessionGetResponse
	if code != http.StatusOK || json.Unmarshal(body, &got) != nil {
		t.Fatalf("GET /api/sessions/%s: %d %s", evs[0].SessionID, code, body)
	}
	if len(got.Turns) != 1 || got.Turns[0].Question != "write then die" || got.Turns[0].Finish != agent.FinishUnavailable ||
		got.Turns[0].RunID != evs[0].ID || !strings.Contains(got.Turns[0].Error, "stopped responding") {
		t.Fatalf("the lost turn is recorded as %+v", got.Turns)
	}
	f, err := files.NewFS(servicetest.Client(t, natsURL)).Read(ctx, &files.ReadRequest{Scope: files.Scope{AccountID: acct.ID, SessionID: evs[0].SessionID}, Path: "/notes/lost.md"})
	must(t, err)
	if !strings.Contains(f.Content, "written before the crash") {
		t.Fatalf("the lost turn's file holds %q", f.Content)
	}
}
