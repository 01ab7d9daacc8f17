package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	agentsvc "github.com/mirobody/mirobody-go/agent-svc"
	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/gateway"
	registrysvc "github.com/mirobody/mirobody-go/registry-svc"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

// upstreamConfig is a config.yaml in upstream Mirobody's shape, as people
// bring it (README, "Coming from Mirobody"); %[1]s is the tools folder,
// %[2]s the scripted provider's base URL, %[3]s the skills folder.
const upstreamConfig = `# Logging Configuration.
LOG_LEVEL: DEBUG
HTTP_SERVER_NAME: mirobody
REDIS_HOST: 10.108.0.9
REDIS_PORT: 6379
PG_HOST: 10.108.0.2
PG_PASSWORD: REPLACE_THIS_VALUE_IN_PRODUCTION
JWT_KEY: REPLACE_THIS_VALUE_IN_PRODUCTION
mcp_tool_dirs:
  - %[1]s
  - builtin
skill_dirs:
  - %[3]s
OPENROUTER_API_KEY: sk-or-test
ALLOWED_TOOLS_DEEP:
DISALLOWED_TOOLS_DEEP: js_eval,task,write_todos
PROMPTS_DEEP:
  - prompts/theta_health.jinja
  - prompts/short.jinja@short
PROVIDERS_DEEP:
  claude-sonnet:
    llm_type: openai
    api_key: OPENROUTER_API_KEY
    base_url: %[2]s
    model: anthropic/claude-sonnet-4.6
    temperature: 0.1
    max_completion_tokens: 60000
ALLOWED_TOOLS_RTC:
DISALLOWED_TOOLS_RTC:
PROMPTS_RTC:
PROVIDERS_BASELINE:
  gpt-5-nano:
    api_key: OPENAI_API_KEY
    model: gpt-5-nano
ALLOWED_TOOLS_BASELINE:
DISALLOWED_TOOLS_BASELINE:
`

// The prompt files the config lists, in upstream's Jinja.
var upstreamPrompts = map[string]string{
	"prompts/theta_health.jinja": "You are a health assistant. Now: {{ current_time }}.{% if language %} Reply in {{ language }}.{% endif %}",
	"prompts/short.jinja":        "Be brief ({{ language }}).",
}

// TestComingFromMirobody starts the stack on upstream's config, prompts
// and tools folder, unchanged, and checks what each of issue 19's items
// promises: the tool's inputSchema and meta, unwrapped and failed results,
// a generator, the provider's sampling settings, the prompts, the agent's
// own tools switched off, and an upstream agent name; the only warnings
// are the documented ones.
func TestComingFromMirobody(t *testing.T) {
	natsURL := servicetest.NATS(t)
	db := servicetest.Postgres(t, nil)
	tools, err := filepath.Abs("testdata/upstream-tools")
	must(t, err)
	skills, err := filepath.Abs("../../skills")
	must(t, err)

	var accountID string
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		if r.Temperature == nil || *r.Temperature != 0.1 || r.MaxCompletionTokens != 60000 || r.Model != "anthropic/claude-sonnet-4.6" {
			return scripted.Step{}, fmt.Errorf("sampling: temperature %v max_completion_tokens %d model %q", r.Temperature, r.MaxCompletionTokens, r.Model)
		}
		if r.LastUser() == "hello" {
			if want := "You are a health assistant. Now: " + time.Now().UTC().Format("2006-01-02 (Monday)") + "."; r.System != want {
				return scripted.Step{}, fmt.Errorf("default prompt %q, want %q", r.System, want)
			}
			return scripted.Step{Text: "hi"}, nil
		}
		if r.System != "Be brief (German)." {
			return scripted.Step{}, fmt.Errorf("prompt_name short: system %q", r.System)
		}
		if r.StepsSinceUser() == 0 {
			for _, off := range []string{"js_eval", "task", "write_todos", "weather"} {
				if r.HasTool(off) {
					return scripted.Step{}, fmt.Errorf("tool %s is offered: %v", off, r.Tools)
				}
			}
			if !r.HasTool("generate_pie_chart") || !r.HasTool("read_file") {
				return scripted.Step{}, fmt.Errorf("tools %v", r.Tools)
			}
			return scripted.Step{Calls: []scripted.Call{
				{Name: "generate_pie_chart", Args: `{"data":[{"a":1},{"b":2}],"title":"T"}`},
				{Name: "fail_chart", Args: `{"reason":"empty series"}`},
				{Name: "stream_words", Args: `{"n":3}`},
			}}, nil
		}
		return scripted.Step{Text: "done"}, nil
	})
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	for name, body := range upstreamPrompts {
		must(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600))
	}
	path := filepath.Join(dir, "config.yaml")
	must(t, os.WriteFile(path, []byte(fmt.Sprintf(upstreamConfig, tools, srv.OpenAIBaseURL(), skills)), 0o600))
	env := map[string]string{"NATS_URL": natsURL, "DATABASE_URL": db.DSN, "HTTP_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0", "TOOLS_WATCH": "false",
		"SECRET_KEY": "0123456789abcdef0123456789abcdef", // as the JWT_KEY warning says
		// The script answers the upstream turns only; a session-title call
		// would be one request more (the title tests turn titles on).
		"AGENT_SESSION_TITLES": "false"}
	res, err := conf.Load(conf.LoadOptions{Path: path, LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	must(t, err)
	cfg := res.Config
	// The documented warnings (README, "Coming from Mirobody"): one line per
	// group of upstream keys that do nothing here.
	wantWarnings := []string{
		"upstream Mirobody config keys HTTP_SERVER_NAME in " + path + " do nothing here: the gateway serves its own web app; set HTTP_ADDR, MCP_PUBLIC_URL and ALLOWED_ORIGINS",
		"upstream Mirobody config keys JWT_KEY in " + path + " do nothing here: access tokens are Ed25519 JWTs whose keys SECRET_KEY seals; set SECRET_KEY",
		"upstream Mirobody config keys PG_HOST, PG_PASSWORD in " + path + " do nothing here: set DATABASE_URL (a postgres:// URL) instead",
		"upstream Mirobody config keys PROVIDERS_BASELINE in " + path + " do nothing here: the Base agent's provider calls our /mcp itself: set PROVIDERS_BASE with type openai-responses or anthropic",
		"upstream Mirobody config keys REDIS_HOST, REDIS_PORT in " + path + " do nothing here: not needed: NATS and PostgreSQL hold what Redis did",
	}
	if !slices.Equal(res.Warnings, wantWarnings) {
		t.Errorf("config warnings:\n%s", strings.Join(res.Warnings, "\n"))
	}
	if cfg.LogLevel != "debug" {
		t.Errorf("LOG_LEVEL %q", cfg.LogLevel)
	}

	log, logs := servicetest.CaptureLogger(t)
	gw := gateway.New(gateway.Options{Config: cfg, Log: log})
	startGroup(t, vfssvc.New(vfssvc.Options{Config: cfg, Log: log}), registrysvc.New(registrysvc.Options{Config: cfg, Log: log}),
		agentsvc.New(agentsvc.Options{Config: cfg, Log: log}), gw)
	ctx := context.Background()
	accts := accounts.NewAccounts(servicetest.Client(t, natsURL))
	acct, err := accts.Create(ctx, &accounts.AccountCreateRequest{Email: "upstream@example.com"})
	must(t, err)
	accountID = acct.ID
	key, err := accts.CreateKey(ctx, &accounts.KeyCreateRequest{AccountID: acct.ID, Name: "upstream"})
	must(t, err)
	st := &chatStack{URL: "http://" + gw.Addr(), Key: key.Key, AccountID: acct.ID, NATS: natsURL, cfg: cfg}

	// Items 1 and 2 over /mcp: inputSchema and meta, unwrapped data.
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "upstream-test", Version: "1"}, nil).
		Connect(cctx, &mcp.StreamableClientTransport{Endpoint: st.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{st.Key}}}, nil)
	must(t, err)
	defer cs.Close()
	list, err := cs.ListTools(cctx, nil)
	must(t, err)
	var pie *mcp.Tool
	for _, tl := range list.Tools {
		if tl.Name == "generate_pie_chart" {
			pie = tl
		}
		if tl.Name == "weather" {
			t.Error("a class whose _enabled() is False is listed")
		}
	}
	if pie == nil {
		t.Fatal("generate_pie_chart is not listed")
	}
	schema, _ := json.Marshal(pie.InputSchema)
	if string(schema) != `{"properties":{"data":{"description":"The slices.","items":{"type":"object"},"type":"array"},"title":{"type":"string"}},"required":["data"],"type":"object"}` {
		t.Errorf("inputSchema %s", schema)
	}
	if pie.Meta["openai/outputTemplate"] != "ui://widget/chart.html" {
		t.Errorf("_meta %v", pie.Meta)
	}
	call, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "generate_pie_chart", Arguments: map[string]any{"data": []any{map[string]any{"a": 1}}}})
	must(t, err)
	if sc, _ := json.Marshal(call.StructuredContent); call.IsError || string(sc) != `{"points":1,"title":"","user":"`+accountID+`"}` {
		t.Errorf("generate_pie_chart: error %v structured %s", call.IsError, sc)
	}

	// Items 2 to 7 in a turn: an upstream agent name, prompt_name, the
	// agent's own tools off, sampling settings, results.
	evs := st.chat(t, map[string]any{"question": "chart", "agent": "Mix", "prompt_name": "short", "language": "German"})
	if len(evs) < 2 || evs[1].Type != agent.EventNotice || evs[1].Message != `agent "Mix" is not available here; the deep agent answers instead` {
		t.Errorf("no notice after start: %+v", evs)
	}
	results := map[string]agent.Event{}
	names := map[string]string{}
	for _, e := range ofType(evs, agent.EventToolCall) {
		names[e.ID] = e.Name
	}
	for _, e := range ofType(evs, agent.EventToolResult) {
		results[names[e.ToolCallID]] = e
	}
	for name, want := range map[string]struct{ status, content string }{
		"generate_pie_chart": {agent.StatusOK, `{"points":2,"title":"T","user":"` + accountID + `"}`},
		"fail_chart":         {agent.StatusError, "empty series"},
		"stream_words":       {agent.StatusOK, "w0 w1 w2 "},
	} {
		if got := results[name]; got.Status != want.status || got.Content != want.content {
			t.Errorf("%s: status %q content %q, want %q %q", name, got.Status, got.Content, want.status, want.content)
		}
	}
	if textOf(evs) != "done" || finishOf(evs) != agent.FinishStop {
		t.Errorf("turn: text %q finish %q", textOf(evs), finishOf(evs))
	}
	evs = st.chat(t, map[string]any{"question": "hello"})
	if textOf(evs) != "hi" || len(ofType(evs, agent.EventNotice)) != 0 {
		t.Errorf("default prompt turn: %+v", evs)
	}
	if errs := srv.Errors(); len(errs) != 0 {
		t.Fatalf("scripted provider: %v", errs)
	}

	// No other warning: the Base agent's default providers lack their keys
	// here (PROVIDERS_BASELINE does not stand in for PROVIDERS_BASE), which
	// is documented start-up behaviour.
	for _, line := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(line, "level=WARN") && !strings.Contains(line, "level=ERROR") {
			continue
		}
		if !strings.Contains(line, `msg="a model provider's key is not set; turns that pick it fail"`) || !strings.Contains(line, "agent=base") {
			t.Errorf("undocumented warning: %s", line)
		}
	}
}
