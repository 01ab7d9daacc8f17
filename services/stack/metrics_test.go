package stack

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	agentsvc "github.com/mirobody/mirobody-go/agent-svc"
	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/gateway"
	registrysvc "github.com/mirobody/mirobody-go/registry-svc"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/svc"
	"github.com/mirobody/mirobody-go/services/telemetry"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

// TestMetricsEndToEnd: after MCP calls of a Python tool, a Go built-in and
// an external server's tool, and a chat turn, the binary's /metrics holds a
// series for each tool (the external one under the bounded label
// "external"), the NATS series of registry-svc, the gateway's HTTP series by
// route template, and the agent's model call series.
func TestMetricsEndToEnd(t *testing.T) {
	natsURL := servicetest.NATS(t)
	db := servicetest.Postgres(t, nil)
	log := servicetest.Logger(t)
	cfg := testConfig(t, natsURL, db.DSN)
	cfg.MCPToolDirs = []string{"testdata/session-tools", "builtin"}
	cfg.MCPClientAllowPriv = true
	model := scripted.New(scripted.Sequence(scripted.Step{Text: "hello", InputTokens: 5, OutputTokens: 3}))
	t.Cleanup(model.Close)
	cfg.ProvidersDeep = map[string]conf.Provider{"oa": {Type: "openai", Model: "gpt-test", BaseURL: model.OpenAIBaseURL()}}
	reg := telemetry.NewRegistry()
	gw := gateway.New(gateway.Options{Config: cfg, Log: log, Metrics: reg})
	admin := svc.NewAdmin(svc.AdminOptions{Addr: "127.0.0.1:0", Registry: reg})
	g := svc.NewGroup(svc.Options{Admin: admin, Log: log, Grace: 10 * time.Second, Services: []svc.Service{
		vfssvc.New(vfssvc.Options{Config: cfg, Log: log, Metrics: reg}),
		registrysvc.New(registrysvc.Options{Config: cfg, Log: log, Metrics: reg}),
		agentsvc.New(agentsvc.Options{Config: cfg, Log: log, Metrics: reg}), gw}})
	must(t, g.Start(context.Background()))
	t.Cleanup(func() { _ = g.Stop(context.Background()) })
	base := "http://" + gw.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	accts := accounts.NewAccounts(servicetest.Client(t, natsURL))
	acct, err := accts.Create(ctx, &accounts.AccountCreateRequest{Email: "metrics@example.com"})
	must(t, err)
	key, err := accts.CreateKey(ctx, &accounts.KeyCreateRequest{AccountID: acct.ID, Name: "t"})
	must(t, err)
	weather := servicetest.NewMCPServer(t, servicetest.MCPServerOptions{})
	textTool(weather, "forecast", "sunny in ")
	if code, body := apiJSON(t, http.MethodPost, base+"/api/mcp-servers", key.Key, map[string]any{"name": "weather", "url": weather.URL}); code != http.StatusCreated {
		t.Fatalf("adding the external server: %d %s", code, body)
	}

	cs := mcpSession(t, base+"/mcp", key.Key)
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"session_of", map[string]any{}},
		{"resolve_indicator", map[string]any{"name": "hdl"}},
		{"weather__forecast", map[string]any{"text": "Paris"}},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: c.args})
		if err != nil || res.IsError {
			t.Fatalf("calling %s: %+v %v", c.name, res, err)
		}
	}

	st := &chatStack{URL: base, Key: key.Key}
	if evs := st.chat(t, map[string]any{"question": "hi", "agent": "deep", "provider": "oa"}); len(ofType(evs, "end")) != 1 {
		t.Fatalf("chat turn events: %+v", evs)
	}

	want := []string{
		`mirobody_http_requests_total{method="POST",route="/api/chat",status="2xx"} 1`,
		`mirobody_agent_llm_calls_total{model="gpt-test",outcome="ok",provider="oa"} 1`,
		`mirobody_agent_llm_tokens_total{direction="output",model="gpt-test",provider="oa"} 3`,
		`mirobody_registry_tool_calls_total{kind="python",outcome="ok",tool="session_of"} 1`,
		`mirobody_registry_tool_calls_total{kind="builtin",outcome="ok",tool="resolve_indicator"} 1`,
		`mirobody_registry_tool_calls_total{kind="external",outcome="ok",tool="external"} 1`,
		`mirobody_registry_tool_call_duration_seconds_count{kind="python",tool="session_of"} 1`,
		`mirobody_registry_tool_result_bytes_count{kind="external",tool="external"} 1`,
		`mirobody_nats_requests_total{code="ok",service="registry",subject="registry.tools.call"} 3`,
		`mirobody_http_requests_total{method="POST",route="/api/mcp-servers",status="2xx"} 1`,
		`mirobody_http_requests_total{method="POST",route="/mcp",status="2xx"}`,
	}
	// The HTTP series are counted when a handler returns, which may be just
	// after the client has read its answer.
	var body string
	servicetest.Eventually(t, 5*time.Second, func() bool {
		_, b := httpGet(t, "http://"+admin.Addr()+"/metrics", "")
		body = string(b)
		for _, w := range want {
			if !strings.Contains(body, w) {
				return false
			}
		}
		return true
	}, "every series on /metrics")
	if strings.Contains(body, "weather__forecast") || strings.Contains(body, acct.ID) {
		t.Errorf("an external tool name or an account id became a label value")
	}
}
