package agentsvc

import (
	"context"
	"testing"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/wire/wiretest"
)

// TestServesItsContract: agent-svc answers every endpoint of its
// contract, and nothing else.
func TestServesItsContract(t *testing.T) {
	url := servicetest.NATS(t)
	res, err := conf.Load(conf.LoadOptions{LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	res.Config.NATSURL = url
	s := New(Options{Config: res.Config, Log: servicetest.Logger(t)})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	wiretest.Served(t, servicetest.Client(t, url), Name, agent.Contracts())
}
