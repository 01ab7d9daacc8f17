package stack

import (
	"context"
	"encoding/json"
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
	"github.com/mirobody/mirobody-go/services/svc"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

// TestRunsSaveSurvivesVFSReplicaDeath: the vfs-svc replica that saves a
// finished turn dies after it stored the turn and before it answered (its
// NATS connection is cut while the save waits on a row lock the test
// holds). The save is idempotent, so agent-svc sends it again to the
// replica started meanwhile, which finds the turn saved: the client sees
// the turn end with stop, not "could not be saved", and the session holds
// the turn once.
func TestRunsSaveSurvivesVFSReplicaDeath(t *testing.T) {
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

	// Replica b is the only vfs-svc until the save is under way; it
	// reaches NATS through a proxy, so that cutting it is a crash.
	proxy := servicetest.NewProxy(t, natsURL[len("nats://"):])
	cfgB := *cfg
	cfgB.NATSURL = proxy.URL()
	vb := svc.NewGroup(svc.Options{Services: []svc.Service{vfssvc.New(vfssvc.Options{Config: &cfgB, Log: log.With("replica", "vfs-b")})}, Log: log, Grace: time.Second})
	must(t, vb.Start(context.Background()))
	t.Cleanup(func() { _ = vb.Stop(context.Background()) })
	gw := gateway.New(gateway.Options{Config: cfg, Log: log})
	startGroup(t, registrysvc.New(registrysvc.Options{Config: cfg, Log: log}), agentsvc.New(agentsvc.Options{Config: cfg, Log: log}), gw)

	ctx := context.Background()
	st := &chatStack{URL: "http://" + gw.Addr(), Key: newAccountKey(ctx, t, natsURL, "turnsave@example.com")}
	start, stream := st.startStream(t, ctx, map[string]any{"question": "turn 5", "provider": "oa"})
	<-script.waiting // both tool steps are done; the answer waits

	// The save will wait on the turn's row.
	lock, err := db.Pool.Begin(ctx)
	must(t, err)
	t.Cleanup(func() { _ = lock.Rollback(context.Background()) })
	_, err = lock.Exec(ctx, `SELECT 1 FROM session_turns WHERE run_id = $1 FOR UPDATE`, start.ID)
	must(t, err)
	close(script.gate)
	servicetest.Eventually(t, 10*time.Second, func() bool {
		var n int
		err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND query LIKE '%session_turns%'`).Scan(&n)
		return err == nil && n > 0
	}, "the turn's save does not wait on the locked row")

	va := svc.NewGroup(svc.Options{Services: []svc.Service{vfssvc.New(vfssvc.Options{Config: cfg, Log: log.With("replica", "vfs-a")})}, Log: log, Grace: time.Second})
	must(t, va.Start(context.Background()))
	t.Cleanup(func() { _ = va.Stop(context.Background()) })
	proxy.Kill()
	// Replica b, cut off, goes on with the save: it stores the turn, and
	// its answer is lost.
	must(t, lock.Rollback(ctx))

	evs := readEvents(t, stream)
	if finishOf(evs) != agent.FinishStop || !strings.Contains(textOf(evs), "5+100=105") || len(ofType(evs, agent.EventError)) > 0 {
		t.Fatalf("events %+v", evs)
	}
	code, body := httpGet(t, st.URL+"/api/sessions/"+start.SessionID, st.Key)
	var got sessions.SessionGetResponse
	if code != http.StatusOK || json.Unmarshal(body, &got) != nil || got.Session.Turns != 1 || len(got.Turns) != 1 ||
		got.Turns[0].Finish != agent.FinishStop || got.Turns[0].Answer != "5+100=105" || got.Turns[0].RunID != start.ID {
		t.Fatalf("the session holds %d %s, want the turn once, saved", code, body)
	}
}
