package registrysvc

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mirobody/mirobody-go/registry-svc/internal/builtin"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/wire"
)

// env is a service under test.
type env struct {
	url    string
	svc    *Service
	client *registry.Client
	wire   *wire.Client
	logs   *servicetest.LogBuffer
}

// testConfig loads the defaults with the given keys overridden, the way
// environment variables override config.yaml.
func testConfig(t testing.TB, url string, keys map[string]string) *conf.Config {
	t.Helper()
	keys["NATS_URL"] = url
	res, err := conf.Load(conf.LoadOptions{Path: "testdata/empty.yaml", LookupEnv: func(k string) (string, bool) {
		v, ok := keys[k]
		return v, ok
	}})
	if err != nil {
		t.Fatalf("loading config: %v", err)
	}
	return res.Config
}

// start runs registry-svc on a fresh NATS server with keys overriding the
// default configuration.
func start(t testing.TB, keys map[string]string, builtins ...*builtin.Tool) *env {
	t.Helper()
	url := servicetest.NATS(t)
	return startOn(t, url, keys, builtins...)
}

func startOn(t testing.TB, url string, keys map[string]string, builtins ...*builtin.Tool) *env {
	t.Helper()
	return startWith(t, url, keys, nil, builtins...)
}

// startWith is startOn with a metrics registry (nil: none).
func startWith(t testing.TB, url string, keys map[string]string, metrics prometheus.Registerer, builtins ...*builtin.Tool) *env {
	t.Helper()
	if _, ok := keys["TOOLS_WATCH"]; !ok {
		keys["TOOLS_WATCH"] = "false"
	}
	log, lb := servicetest.CaptureLogger(t)
	opts := Options{Config: testConfig(t, url, keys), Log: log, Metrics: metrics}
	if len(builtins) > 0 {
		opts.Builtins = builtins
	}
	s := New(opts)
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("starting registry-svc: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(context.Background()); err != nil {
			t.Errorf("stopping registry-svc: %v", err)
		}
	})
	wc := servicetest.Client(t, url)
	return &env{url: url, svc: s, client: registry.NewClient(wc), wire: wc, logs: lb}
}

func (e *env) names(t testing.TB, c registry.Caller) []string {
	t.Helper()
	resp, err := e.client.List(context.Background(), &registry.ListRequest{Caller: c})
	if err != nil {
		t.Fatalf("listing: %v", err)
	}
	out := make([]string, 0, len(resp.Tools))
	for _, tl := range resp.Tools {
		out = append(out, tl.Name)
	}
	return out
}

func (e *env) call(t testing.TB, c registry.Caller, name, args string) (*registry.CallResponse, error) {
	t.Helper()
	return e.client.Call(context.Background(), &registry.CallRequest{Caller: c, Name: name, Arguments: json.RawMessage(args)})
}

// text joins the text blocks of a result.
func text(r *registry.CallResponse) string {
	var parts []string
	for _, c := range r.Content {
		var b struct{ Text string }
		_ = json.Unmarshal(c, &b)
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n")
}

var (
	alice = registry.Caller{AccountID: "acct-alice", SessionID: "sess-1"}
	anon  = registry.Caller{}
)
