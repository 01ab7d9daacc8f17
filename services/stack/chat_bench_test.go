package stack

import (
	"context"
	"testing"

	"github.com/google/uuid"

	agentsvc "github.com/mirobody/mirobody-go/agent-svc"
	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	registrysvc "github.com/mirobody/mirobody-go/registry-svc"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

// BenchmarkChatTurns measures whole turns per second through two agent-svc
// replicas in one queue group: load the session, two model steps against a
// zero-latency scripted provider (a built-in tool call, then the answer),
// and save the session in vfs-svc.
func BenchmarkChatTurns(b *testing.B) {
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		if r.StepsSinceUser() == 0 {
			return scripted.Step{Calls: []scripted.Call{{Name: "write_todos", Args: `{"todos":[{"content":"x","status":"completed"}]}`}}}, nil
		}
		return scripted.Step{Text: "done"}, nil
	})
	b.Cleanup(srv.Close)
	natsURL := servicetest.NATS(b)
	db := servicetest.Postgres(b, nil)
	log := servicetest.Logger(b)
	res, err := conf.Load(conf.LoadOptions{Path: "testdata/empty.yaml", LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		b.Fatal(err)
	}
	cfg := res.Config
	cfg.NATSURL, cfg.DatabaseURL = natsURL, db.DSN
	cfg.HTTPAddr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.ToolsWatch = false
	cfg.MCPToolDirs = []string{"builtin"}
	cfg.ProvidersDeep = map[string]conf.Provider{"oa": {Type: "openai", Model: "m", BaseURL: srv.OpenAIBaseURL()}}
	// One account drives every turn here, more at once than AGENT_MAX_TURNS_PER_ACCOUNT allows.
	cfg.MaxTurnsPerAccount = 64
	services := []interface {
		Start(context.Context) error
		Stop(context.Context) error
	}{vfssvc.New(vfssvc.Options{Config: cfg, Log: log}), registrysvc.New(registrysvc.Options{Config: cfg, Log: log}),
		agentsvc.New(agentsvc.Options{Config: cfg, Log: log}), agentsvc.New(agentsvc.Options{Config: cfg, Log: log})}
	for _, s := range services {
		if err := s.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Stop(context.Background()) })
	}
	wc := servicetest.Client(b, natsURL)
	acct, err := accounts.NewAccounts(wc).Create(context.Background(), &accounts.AccountCreateRequest{Email: "bench@example.com"})
	if err != nil {
		b.Fatal(err)
	}
	client := agent.NewClient(wc)
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			finish := ""
			_, err := client.Run(context.Background(), &agent.StartRequest{RunID: uuid.NewString(), AccountID: acct.ID, Question: "q", Provider: "oa"},
				func(ev agent.Event) {
					if ev.Type == agent.EventEnd {
						finish = ev.FinishReason
					}
				})
			if err != nil || finish != agent.FinishStop {
				b.Errorf("turn: %q %v", finish, err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
}
