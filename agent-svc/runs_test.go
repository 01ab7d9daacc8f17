package agentsvc

import (
	"context"
	"fmt"
	"testing"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/wire"
)

// One account may run AGENT_MAX_TURNS_PER_ACCOUNT turns at once; one more
// is refused with resource_exhausted, other accounts are not affected, and
// an ended turn frees its place.
func TestTurnsPerAccountLimit(t *testing.T) {
	release := make(chan struct{})
	srv := scripted.New(func(*scripted.Received) (scripted.Step, error) {
		<-release
		return scripted.Step{Text: "done"}, nil
	})
	t.Cleanup(srv.Close)
	res, err := conf.Load(conf.LoadOptions{LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	cfg := res.Config
	cfg.NATSURL, cfg.MaxTurnsPerAccount = servicetest.NATS(t), 2
	cfg.ProvidersDeep = map[string]conf.Provider{"s": {Type: "openai", Model: "scripted", BaseURL: srv.OpenAIBaseURL()}}
	s := New(Options{Config: cfg, Log: servicetest.Logger(t)})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	n := 0
	start := func(account string) error {
		n++
		_, err := s.start(context.Background(), &agent.StartRequest{RunID: fmt.Sprint("r", n), Inbox: fmt.Sprint("_INBOX.test.", n),
			AccountID: account, Question: "q", Agent: string(agent.AgentDeep), Provider: "s"})
		return err
	}
	for range 2 {
		if err := start("a"); err != nil {
			t.Fatal(err)
		}
	}
	if err := start("a"); !wire.IsCode(err, wire.ResourceExhausted) {
		t.Fatalf("a third turn of one account: %v, want resource_exhausted", err)
	}
	if err := start("b"); err != nil {
		t.Fatalf("another account's turn: %v", err)
	}
	close(release)
	s.wg.Wait()
	if err := start("a"); err != nil {
		t.Fatalf("a turn after the others ended: %v", err)
	}
	s.wg.Wait()
}
