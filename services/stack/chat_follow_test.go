package stack

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	agentsvc "github.com/mirobody/mirobody-go/agent-svc"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/svc"
)

// TestChatStreamCarriesOnAfterAgentDeath: the agent replica serving a
// chat turn dies mid-turn (its NATS connection is cut). The client's one
// POST /api/chat response is not cut: the gateway follows the durable run,
// which another replica takes over, to its end event. Every recorded event
// reaches the client once and in order: the live stream's ids run 1, 2, 3…
// without a gap or a repeat, and its events are exactly what GET
// /api/runs/{id}/stream replays afterwards.
func TestChatStreamCarriesOnAfterAgentDeath(t *testing.T) {
	script, natsURL, log, cfg, gw := startTakeoverStack(t, nil)
	proxy := servicetest.NewProxy(t, natsURL[len("nats://"):])
	cfgA := *cfg
	cfgA.NATSURL = proxy.URL()
	ga := svc.NewGroup(svc.Options{Services: []svc.Service{agentsvc.New(agentsvc.Options{Config: &cfgA, Log: log.With("replica", "a")})}, Log: log, Grace: time.Second})
	must(t, ga.Start(context.Background()))
	t.Cleanup(func() { _ = ga.Stop(context.Background()) })
	ctx := context.Background()
	st := &chatStack{URL: "http://" + gw.Addr(), Key: newAccountKey(ctx, t, natsURL, "follow@example.com")}

	resp := st.postSSE(t, "/api/chat", `{"question":"turn 3","provider":"oa"}`, "")
	<-script.waiting // both tool steps are recorded; the answer waits
	gb := svc.NewGroup(svc.Options{Services: []svc.Service{agentsvc.New(agentsvc.Options{Config: cfg, Log: log.With("replica", "b")})}, Log: log, Grace: time.Second})
	must(t, gb.Start(context.Background()))
	t.Cleanup(func() { _ = gb.Stop(context.Background()) })
	proxy.Kill()
	close(script.gate)

	live := withoutHeartbeats(readSSE(t, resp))
	evs := live.events()
	if finishOf(evs) != agent.FinishStop || !strings.Contains(textOf(evs), "3+100=103") || len(ofType(evs, agent.EventError)) > 0 {
		t.Fatalf("the stream after the replica died: %+v", evs)
	}
	if len(ofType(evs, agent.EventNotice)) != 1 {
		t.Errorf("want one notice that the turn was taken over: %+v", evs)
	}
	for i, e := range live {
		if e.id != int64(i+1) {
			t.Fatalf("event %d (%s) has id %d: the stream skipped or repeated events: %+v", i, e.ev.Type, e.id, live)
		}
	}
	replay := withoutHeartbeats(readSSE(t, st.getSSE(t, "/api/runs/"+evs[0].ID+"/stream", st.Key, "")))
	if !reflect.DeepEqual(live, replay) {
		t.Fatalf("the live stream\n%+v\nis not what the run recorded\n%+v", live, replay)
	}
}

// withoutHeartbeats drops the stream's heartbeats, which are not recorded.
func withoutHeartbeats(s sseEvents) sseEvents {
	var out sseEvents
	for _, e := range s {
		if e.ev.Type != agent.EventHeartbeat {
			out = append(out, e)
		}
	}
	return out
}
