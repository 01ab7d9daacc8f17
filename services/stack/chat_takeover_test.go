package stack

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
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
	"github.com/mirobody/mirobody-go/services/vfs/audit"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

// takeoverScript is the scripted model of the takeover tests: a turn
// "turn N" writes /notes/N.md, adds N and 100, and answers "N+100=<sum>".
// The answer waits until gate is closed, so that a test can stop a
// replica while every turn has completed tool steps behind it. calls
// counts the tool calls the model asked for, by turn and tool.
type takeoverScript struct {
	gate    chan struct{}
	waiting chan string
	mu      sync.Mutex
	asked   map[string]int
}

// startTakeoverStack starts what both takeover tests share: a takeover
// script behind the scripted provider, and vfs-svc, registry-svc and the
// gateway on fresh NATS and Postgres with 200 ms heartbeats, but no agent
// replica (each test starts its own). tweak, if set, changes the config
// first.
func startTakeoverStack(t *testing.T, tweak func(*conf.Config)) (*takeoverScript, string, *slog.Logger, *conf.Config, *gateway.Service) {
	t.Helper()
	script := newTakeoverScript()
	srv := scripted.New(script.respond)
	t.Cleanup(srv.Close)
	natsURL := servicetest.NATS(t)
	db := servicetest.Postgres(t, nil)
	log := servicetest.Logger(t)
	cfg := testConfig(t, natsURL, db.DSN)
	tools, err := filepath.Abs("testdata/chat-tools")
	must(t, err)
	cfg.MCPToolDirs = []string{tools, "builtin"}
	cfg.ProvidersDeep = map[string]conf.Provider{"oa": {Type: "openai", Model: "m", BaseURL: srv.OpenAIBaseURL()}}
	cfg.HeartbeatMS = 200
	if tweak != nil {
		tweak(cfg)
	}
	gw := gateway.New(gateway.Options{Config: cfg, Log: log})
	startGroup(t, vfssvc.New(vfssvc.Options{Config: cfg, Log: log}), registrysvc.New(registrysvc.Options{Config: cfg, Log: log}), gw)
	return script, natsURL, log, cfg, gw
}

func newTakeoverScript() *takeoverScript {
	return &takeoverScript{gate: make(chan struct{}), waiting: make(chan string, 64), asked: map[string]int{}}
}

func (s *takeoverScript) respond(r *scripted.Received) (scripted.Step, error) {
	n := strings.TrimPrefix(r.LastUser(), "turn ")
	switch r.StepsSinceUser() {
	case 0:
		s.count(n, "write_file")
		return scripted.Step{Calls: []scripted.Call{{Name: "write_file", Args: fmt.Sprintf(`{"file_path":"/notes/%s.md","content":"turn %s"}`, n, n)}}}, nil
	case 1:
		s.count(n, "add")
		return scripted.Step{Calls: []scripted.Call{{Name: "add", Args: fmt.Sprintf(`{"a":%s,"b":100}`, n)}}}, nil
	}
	s.waiting <- n
	<-s.gate
	res := r.ToolResults()
	return scripted.Step{Text: fmt.Sprintf("%s+100=%s", n, res[len(res)-1].Content)}, nil
}

func (s *takeoverScript) count(turn, tool string) {
	s.mu.Lock()
	s.asked[turn+"/"+tool]++
	s.mu.Unlock()
}

// TestRunsTakeOver is issue 16's done-when: two agent replicas; 4 turns
// run on one, each with two completed tool steps (write_file, then add),
// when that replica dies (its NATS connection is cut; it saves nothing).
// All 4 complete on the other replica with the right answer, over the
// same SSE streams; no tool step ran twice (the model asked for each once,
// each file is at version 1, the audit log has one add per turn); and each
// session's history and files agree.
func TestRunsTakeOver(t *testing.T) {
	script, natsURL, log, cfg, gw := startTakeoverStack(t, func(cfg *conf.Config) { cfg.MaxTurnsPerAccount = 16 })
	// Replica a reaches NATS through a proxy, so that cutting it is a
	// crash as the others see it: no drain, no save, no goodbye.
	proxy := servicetest.NewProxy(t, natsURL[len("nats://"):])
	cfgA := *cfg
	cfgA.NATSURL = proxy.URL()
	ga := svc.NewGroup(svc.Options{Services: []svc.Service{agentsvc.New(agentsvc.Options{Config: &cfgA, Log: log.With("replica", "a")})}, Log: log, Grace: time.Second})
	must(t, ga.Start(context.Background()))
	t.Cleanup(func() { _ = ga.Stop(context.Background()) })

	ctx := context.Background()
	nc := servicetest.Client(t, natsURL)
	accts := accounts.NewAccounts(nc)
	acct, err := accts.Create(ctx, &accounts.AccountCreateRequest{Email: "takeover@example.com"})
	must(t, err)
	key, err := accts.CreateKey(ctx, &accounts.KeyCreateRequest{AccountID: acct.ID, Name: "k"})
	must(t, err)
	st := &chatStack{URL: "http://" + gw.Addr(), Key: key.Key}

	const turns = 4
	streams := make([]*bufio.Reader, turns)
	starts := make([]agent.Event, turns)
	for i := range turns {
		starts[i], streams[i] = st.startStream(t, ctx, map[string]any{"question": fmt.Sprint("turn ", i), "provider": "oa"})
	}
	for range turns {
		<-script.waiting // every turn has written its file and added
	}
	gb := svc.NewGroup(svc.Options{Services: []svc.Service{agentsvc.New(agentsvc.Options{Config: cfg, Log: log.With("replica", "b")})}, Log: log, Grace: time.Second})
	must(t, gb.Start(context.Background()))
	t.Cleanup(func() { _ = gb.Stop(context.Background()) })
	killed := time.Now()
	proxy.Kill()
	close(script.gate)

	fs := files.NewFS(nc)
	for i := range turns {
		evs := readEvents(t, streams[i])
		want := fmt.Sprintf("%d+100=%d", i, i+100)
		if finishOf(evs) != agent.FinishStop || !strings.Contains(textOf(evs), want) {
			t.Fatalf("turn %d: events %+v", i, evs)
		}
		code, body := httpGet(t, st.URL+"/api/sessions/"+starts[i].SessionID, st.Key)
		var got sessions.SessionGetResponse
		if code != http.StatusOK || json.Unmarshal(body, &got) != nil || len(got.Turns) != 1 || got.Turns[0].Finish != agent.FinishStop ||
			got.Turns[0].Answer != want || got.Turns[0].RunID != starts[i].ID {
			t.Fatalf("turn %d is recorded as %d %s", i, code, body)
		}
		loaded, err := sessions.NewSessions(nc).Load(ctx, &sessions.SessionLoadRequest{AccountID: acct.ID, SessionID: starts[i].SessionID})
		must(t, err)
		if n := strings.Count(string(loaded.Messages), `"role":"tool"`); n != 2 {
			t.Fatalf("turn %d: the history holds %d tool results, want 2: %s", i, n, loaded.Messages)
		}
		f, err := fs.Read(ctx, &files.ReadRequest{Scope: files.Scope{AccountID: acct.ID, SessionID: starts[i].SessionID}, Path: fmt.Sprintf("/notes/%d.md", i)})
		must(t, err)
		if f.Version != 1 || !strings.Contains(f.Content, fmt.Sprint("turn ", i)) {
			t.Fatalf("turn %d: the file is at version %d with %q, want written once", i, f.Version, f.Content)
		}
	}
	t.Logf("4 turns completed %v after the replica was cut off", time.Since(killed))
	script.mu.Lock()
	for k, n := range script.asked {
		if n != 1 {
			t.Errorf("the model asked for %s %d times", k, n)
		}
	}
	if len(script.asked) != 2*turns {
		t.Errorf("tool calls asked for: %v", script.asked)
	}
	script.mu.Unlock()
	servicetest.Eventually(t, 10*time.Second, func() bool {
		resp, err := audit.Query.Call(ctx, nc, &audit.QueryRequest{AccountID: acct.ID})
		if err != nil {
			return false
		}
		adds := 0
		for _, r := range resp.Records {
			if r.Tool == "add" {
				adds++
			}
		}
		if adds > turns {
			t.Fatalf("the audit log has %d add calls for %d turns", adds, turns)
		}
		return adds == turns
	}, "the audit log does not show one add per turn")
}

// sseEvent is one event of an SSE stream with its id (0 when it has none).
type sseEvent struct {
	id int64
	ev agent.Event
}

type sseEvents []sseEvent

func (s sseEvents) events() []agent.Event {
	out := make([]agent.Event, len(s))
	for i, e := range s {
		out[i] = e.ev
	}
	return out
}

// lastID is the id of the last event that has one.
func (s sseEvents) lastID() int64 {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i].id > 0 {
			return s[i].id
		}
	}
	return 0
}

// readSSE reads an SSE stream to its end, keeping each event's id.
func readSSE(t *testing.T, resp *http.Response) sseEvents {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %s", resp.Status)
	}
	var out sseEvents
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "data: "):
			must(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.ev))
		case strings.HasPrefix(line, "id: "):
			_, err := fmt.Sscan(strings.TrimPrefix(line, "id: "), &cur.id)
			must(t, err)
		case line == "":
			if cur.ev.Type != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		}
	}
	return out
}

// postSSE posts body to path and returns the response.
func (st *chatStack) postSSE(t *testing.T, path, body, key string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, st.URL+path, strings.NewReader(body))
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+cmp.Or(key, st.Key))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// getSSE gets path with key, and Last-Event-ID when lastID is set.
func (st *chatStack) getSSE(t *testing.T, path, key, lastID string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, st.URL+path, nil)
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestRunsHandOverOnStop: a replica that stops (SIGTERM) while a turn
// runs past its grace period hands the run over: it releases the lease,
// so another replica resumes the run at its next sweep instead of after
// the lease runs out, and the turn completes over the same stream.
func TestRunsHandOverOnStop(t *testing.T) {
	script, natsURL, log, cfg, gw := startTakeoverStack(t, nil)
	ga := svc.NewGroup(svc.Options{Services: []svc.Service{agentsvc.New(agentsvc.Options{Config: cfg, Log: log.With("replica", "a")})}, Log: log, Grace: 300 * time.Millisecond})
	must(t, ga.Start(context.Background()))
	ctx := context.Background()
	st := &chatStack{URL: "http://" + gw.Addr(), Key: newAccountKey(ctx, t, natsURL, "handover@example.com")}
	_, stream := st.startStream(t, ctx, map[string]any{"question": "turn 7", "provider": "oa"})
	<-script.waiting
	gb := svc.NewGroup(svc.Options{Services: []svc.Service{agentsvc.New(agentsvc.Options{Config: cfg, Log: log.With("replica", "b")})}, Log: log, Grace: time.Second})
	must(t, gb.Start(context.Background()))
	t.Cleanup(func() { _ = gb.Stop(context.Background()) })
	_ = ga.Stop(context.Background())
	stopped := time.Now()
	close(script.gate)
	evs := readEvents(t, stream)
	took := time.Since(stopped)
	if finishOf(evs) != agent.FinishStop || !strings.Contains(textOf(evs), "7+100=107") {
		t.Fatalf("events %+v", evs)
	}
	if lease := agent.Lease(time.Duration(cfg.HeartbeatMS) * time.Millisecond); took >= lease {
		t.Errorf("the turn ended %v after its replica stopped, want within the lease (%v): the run was not handed over", took, lease)
	}
	script.mu.Lock()
	defer script.mu.Unlock()
	for k, n := range script.asked {
		if n != 1 {
			t.Errorf("the model asked for %s %d times", k, n)
		}
	}
}
