package stack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/gateway"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/natsx"
	"github.com/mirobody/mirobody-go/services/servicetest"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

// authTurn is the scripted turn of TestDevStackWithNATSAuth: one registry
// tool (Python, with user_info) and one vfs tool, then an answer.
func authTurn(r *scripted.Received) (scripted.Step, error) {
	switch r.StepsSinceUser() {
	case 0:
		return scripted.Step{Calls: []scripted.Call{
			{Name: "whoami", Args: `{}`},
			{Name: "write_file", Args: `{"file_path":"/notes/auth.md","content":"secured\n"}`},
		}}, nil
	case 1:
		res := r.ToolResults()
		if len(res) != 2 || !strings.HasPrefix(res[0].Content, "account ") || !strings.HasPrefix(res[1].Content, "Wrote /notes/auth.md") {
			return scripted.Step{}, fmt.Errorf("tool results %+v", res)
		}
		return scripted.Step{Text: "secured turn done"}, nil
	}
	return scripted.Step{}, fmt.Errorf("unexpected step %d", r.StepsSinceUser())
}

// The stack as `mirobody dev` runs it, NATS auth on with the real
// permissions: a chat turn (agent → registry and vfs, run events on a
// stream), MCP calls (registry → vfs, tool progress on a stream),
// `mirobody data import` and `mirobody keys create` as the cli identity. A
// permission missing from the table fails one of these steps.
func TestDevStackWithNATSAuth(t *testing.T) {
	srv := scripted.New(authTurn)
	t.Cleanup(srv.Close)
	db := servicetest.Postgres(t, nil)
	natsURL := "nats://" + servicetest.FreeAddr(t)
	cfg := testConfig(t, natsURL, db.DSN)
	cfg.DevDir = t.TempDir()
	chatTools, err := filepath.Abs("testdata/chat-tools")
	must(t, err)
	fixtures, err := filepath.Abs(fixtureTools)
	must(t, err)
	cfg.MCPToolDirs = []string{chatTools, fixtures, "builtin"}
	cfg.ProvidersDeep = map[string]conf.Provider{"oa": {Type: "openai", Model: "gpt-test", BaseURL: srv.OpenAIBaseURL()}}
	cfg.HeartbeatMS = 200
	cfg.RateLimitAcct, cfg.RateLimitIP = 0, 0
	cfg.MCPClientAllowPriv = true
	var banner bytes.Buffer
	services, err := Dev(DevOptions{Config: cfg, Log: servicetest.Logger(t), Out: &banner})
	must(t, err)
	startGroup(t, services...)
	var gw *gateway.Service
	for _, s := range services {
		if g, ok := s.(*gateway.Service); ok {
			gw = g
		}
	}
	m := regexp.MustCompile(`Demo API key   (mb_\S+)`).FindStringSubmatch(banner.String())
	if m == nil {
		t.Fatalf("banner has no demo key:\n%s", banner.String())
	}
	demoKey, base := m[1], "http://"+gw.Addr()

	credsDir := filepath.Join(cfg.DevDir, devCredsDir)
	for _, id := range natsx.IdentityNames() {
		seed, err := natsx.Seed(natsx.SeedFile(credsDir, id))
		must(t, err)
		if strings.Contains(banner.String(), seed) {
			t.Errorf("the banner shows the %s seed", id)
		}
	}
	if nc, err := nats.Connect(natsURL); !errors.Is(err, nats.ErrAuthorization) {
		if nc != nil {
			nc.Close()
		}
		t.Fatalf("dev's NATS accepted a client without credentials (err %v)", err)
	}

	t.Run("chat", func(t *testing.T) {
		st := &chatStack{URL: base, Key: demoKey}
		evs := st.chat(t, map[string]any{"question": "Run the secured turn", "provider": "oa"})
		if errs := srv.Errors(); len(errs) > 0 {
			t.Fatalf("the scripted provider saw unexpected requests: %v", errs)
		}
		if len(evs) == 0 || evs[len(evs)-1].Type != agent.EventEnd || evs[len(evs)-1].FinishReason != agent.FinishStop {
			t.Fatalf("turn did not end with stop: %+v", evs)
		}
		if code, body := httpGet(t, base+"/api/sessions/"+evs[0].SessionID, demoKey); code != http.StatusOK || !bytes.Contains(body, []byte("secured turn done")) {
			t.Errorf("GET the session: %d %s", code, body)
		}
	})

	// The commands find dev's cli seed under DEV_DIR.
	cfgFile := filepath.Join(t.TempDir(), "config.yaml")
	must(t, os.WriteFile(cfgFile, []byte(fmt.Sprintf("NATS_URL: %s\nDEV_DIR: %s\n", natsURL, cfg.DevDir)), 0o600))
	run := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := Main(context.Background(), append(args, "--config", cfgFile), &out, &errOut); code != 0 {
			t.Fatalf("mirobody %s = %d: %s %s", strings.Join(args, " "), code, out.String(), errOut.String())
		}
		return out.String()
	}
	t.Run("cli", func(t *testing.T) {
		key := strings.TrimSpace(run("keys", "create", "--account", DemoEmail, "--name", "cli-made"))
		if code, body := httpGet(t, base+"/api/me", key); code != http.StatusOK {
			t.Errorf("GET /api/me with the key `mirobody keys create` made: %d %s", code, body)
		}
		run("data", "import", "--health", "../../examples/health.csv")
	})

	t.Run("mcp", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var progress atomic.Int32
		client := mcp.NewClient(&mcp.Implementation{Name: "secured", Version: "1"}, &mcp.ClientOptions{
			ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
		})
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer{demoKey}}}, nil)
		must(t, err)
		defer cs.Close()
		if names := toolNames(t, cs); !slices.Contains(names, "query_health_indicators") || !slices.Contains(names, "whoami") {
			t.Fatalf("tools/list after the import: %v", names)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "query_health_indicators", Arguments: map[string]any{"mode": "latest"}})
		must(t, err)
		if tx, ok := res.Content[0].(*mcp.TextContent); res.IsError || !ok || !strings.Contains(tx.Text, "Glucose") {
			t.Errorf("query_health_indicators: %+v", res.Content)
		}
		p := &mcp.CallToolParams{Name: "test_tool_with_progress", Arguments: map[string]any{}}
		p.SetProgressToken("secured")
		if res, err = cs.CallTool(ctx, p); err != nil || res.IsError {
			t.Fatalf("test_tool_with_progress: %+v %v", res, err)
		}
		if progress.Load() == 0 {
			t.Error("no progress notifications: the registry's progress stream did not reach the gateway")
		}
		// The tool folders' resources and prompts (registry.resources.*,
		// registry.prompts.*) under the gateway's grants.
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://template/7/data"})
		if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, `"id": "7"`) {
			t.Errorf("resources/read of a fixture template: %+v %v", rr, err)
		}
		gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_arguments", Arguments: map[string]string{"arg1": "a", "arg2": "b"}})
		if err != nil || len(gp.Messages) != 1 {
			t.Errorf("prompts/get of a fixture prompt: %+v %v", gp, err)
		}
	})

	// External MCP servers: cli → registry.servers → vfs.mcpservers, the
	// gateway's /api/mcp-servers, and the change event to the gateway.
	t.Run("external servers", func(t *testing.T) {
		ext := servicetest.NewMCPServer(t, servicetest.MCPServerOptions{})
		textTool(ext, "echo", "echo: ")
		if out := run("mcp", "add", "--name", "ext", "--url", ext.URL); !strings.Contains(out, "ok (1 tools)") {
			t.Errorf("mcp add: %s", out)
		}
		if code, body := httpGet(t, base+"/api/mcp-servers", demoKey); code != http.StatusOK || !bytes.Contains(body, []byte(`"status":"ok"`)) {
			t.Errorf("GET /api/mcp-servers: %d %s", code, body)
		}
		run("mcp", "rm", "--name", "ext")
	})
}

// A service whose seed is missing or unknown to the server fails start-up
// with one line naming the identity and the seed file.
func TestServiceWithoutValidSeedFailsStart(t *testing.T) {
	s := servicetest.SecureNATS(t)
	db := servicetest.Postgres(t, nil)
	strangers := t.TempDir()
	_, err := natsx.EnsureSeeds(strangers)
	must(t, err)
	for _, dir := range []string{t.TempDir(), strangers} {
		cfg := testConfig(t, s.URL, db.DSN)
		cfg.NATSCredsDir = dir
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := vfssvc.New(vfssvc.Options{Config: cfg, Log: servicetest.Logger(t)}).Start(ctx)
		cancel()
		seed := natsx.SeedFile(dir, natsx.IdentityVFS)
		if err == nil || !strings.Contains(err.Error(), seed) || strings.Contains(err.Error(), "\n") {
			t.Errorf("vfs-svc with seeds in %s: err %v, want one line naming %s", dir, err, seed)
		}
	}
}

// `mirobody nats-creds` keeps its seeds between runs, shows secrets only
// in the compose output, and prints the server config of the table.
func TestNATSCredsCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "creds")
	nc := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := Main(context.Background(), append([]string{"nats-creds", "--dir", dir}, args...), &out, &errOut); code != 0 {
			t.Fatalf("mirobody nats-creds %v = %d: %s", args, code, errOut.String())
		}
		return out.String()
	}
	table := nc()
	compose := nc("--output", "compose")
	users := nc("--output", "users")
	if got := nc("--output", "server-config"); got != natsx.ServerConfig() {
		t.Errorf("server-config output is not natsx.ServerConfig()")
	}
	for _, id := range natsx.IdentityNames() {
		seed, err := natsx.Seed(natsx.SeedFile(dir, id))
		must(t, err)
		pub, err := natsx.PublicKey(natsx.SeedFile(dir, id))
		must(t, err)
		userLine := natsx.UserKeyEnv(id) + "=" + pub + "\n"
		if !strings.Contains(table, pub) || strings.Contains(table, seed) || strings.Contains(users, seed) {
			t.Errorf("%s: the table or users output shows the seed, or lacks the public key", id)
		}
		if !strings.Contains(users, userLine) || !strings.Contains(compose, userLine) || !strings.Contains(compose, natsx.SeedEnv(id)+"="+seed+"\n") {
			t.Errorf("%s: users or compose output lacks its lines:\n%s", id, compose)
		}
	}
	var errOut bytes.Buffer
	if code := Main(context.Background(), []string{"nats-creds", "--dir", dir, "--output", "yaml"}, io.Discard, &errOut); code == 0 {
		t.Error("an unknown --output was accepted")
	}
}
