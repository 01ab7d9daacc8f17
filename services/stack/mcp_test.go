package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	agentsvc "github.com/mirobody/mirobody-go/agent-svc"
	"github.com/mirobody/mirobody-go/gateway"
	registrysvc "github.com/mirobody/mirobody-go/registry-svc"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

// fixtureTools is the test-only tool folder with the conformance suite's
// fixtures and an example tool that takes user_info.
const fixtureTools = "../../gateway/testdata/conformance-tools"

// mcpStack is the full stack (gateway → NATS → registry → Python) serving
// the fixture tools, with an API key of a fresh account.
type mcpStack struct {
	URL string
	Key string
	// Config is the stack's configuration, for another gateway replica.
	Config *conf.Config
}

// startMCPStack runs the four services on a copy of the fixture folder
// (test_trigger_tool_change writes into it) with the folder watch on.
func startMCPStack(t *testing.T) *mcpStack {
	t.Helper()
	tools := t.TempDir()
	for _, name := range []string{"conformance_fixtures.py", "conformance_interaction.py", "conformance_resources.py", "examples.py"} {
		b, err := os.ReadFile(filepath.Join(fixtureTools, name))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(tools, name), b, 0o644))
	}
	natsURL := servicetest.NATS(t)
	db := servicetest.Postgres(t, nil)
	log := servicetest.Logger(t)
	cfg := testConfig(t, natsURL, db.DSN)
	cfg.MCPToolDirs = []string{tools}
	// test_trigger_tool_change rewrites a module in its own folder, which
	// the tool sandbox allows only through this opt-in.
	cfg.ToolPaths = []string{"conformance_fixtures=" + tools + ":rw"}
	cfg.ToolsWatch = true
	// One Python worker: a reload (test_trigger_tool_change) then starts one
	// process, which keeps list_changed well inside the suite's 1.5 s window
	// on a busy machine.
	cfg.PythonWorkers = 1
	cfg.MCPSessionKeys = []string{"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}
	cfg.RateLimitAcct, cfg.RateLimitIP = 0, 0
	gw := gateway.New(gateway.Options{Config: cfg, Log: log})
	startGroup(t, vfssvc.New(vfssvc.Options{Config: cfg, Log: log}), registrysvc.New(registrysvc.Options{Config: cfg, Log: log}),
		agentsvc.New(agentsvc.Options{Config: cfg, Log: log}), gw)
	ctx := context.Background()
	accts := accounts.NewAccounts(servicetest.Client(t, natsURL))
	acct, err := accts.Create(ctx, &accounts.AccountCreateRequest{Email: "mcp-clients@example.com"})
	must(t, err)
	key, err := accts.CreateKey(ctx, &accounts.KeyCreateRequest{AccountID: acct.ID, Name: "mcp clients"})
	must(t, err)
	return &mcpStack{URL: "http://" + gw.Addr() + "/mcp", Key: key.Key, Config: cfg}
}

// TestMCPClients runs the official clients against the full stack: the Go
// SDK client, the TypeScript SDK client and the MCP Inspector CLI.
func TestMCPClients(t *testing.T) {
	st := startMCPStack(t)
	node, dir := nodeTools(t)

	t.Run("go-sdk", func(t *testing.T) {
		for _, key := range []string{"", st.Key} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			hc := http.DefaultClient
			if key != "" {
				hc = &http.Client{Transport: bearer{key}}
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "stack-test", Version: "1"}, nil).
				Connect(ctx, &mcp.StreamableClientTransport{Endpoint: st.URL, HTTPClient: hc}, nil)
			must(t, err)
			defer cs.Close()
			tools, err := cs.ListTools(ctx, nil)
			must(t, err)
			if len(tools.Tools) == 0 {
				t.Fatal("no tools")
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{}})
			must(t, err)
			if tx, ok := res.Content[0].(*mcp.TextContent); !ok || tx.Text != "This is a simple text response for testing." {
				t.Errorf("test_simple_text: %+v", res.Content)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "my_account", Arguments: map[string]any{}})
			if key == "" {
				if err == nil {
					t.Errorf("anonymous my_account succeeded: %+v", res)
				}
				continue
			}
			must(t, err)
			if tx, ok := res.Content[0].(*mcp.TextContent); !ok || !strings.HasPrefix(tx.Text, "account ") {
				t.Errorf("my_account: %+v", res.Content)
			}
		}
	})

	script := filepath.Join(dir, "ts-client.mjs")
	src, err := os.ReadFile("testdata/ts-client.mjs")
	must(t, err)
	must(t, os.WriteFile(script, src, 0o644))
	t.Run("typescript-sdk", func(t *testing.T) {
		for _, key := range []string{"", st.Key} {
			out := runNode(t, dir, node, 0, script, st.URL, key)
			var got struct {
				Tools   []string
				Text    string
				Account string
				AnonErr string
			}
			if err := json.Unmarshal(lastLine(out), &got); err != nil {
				t.Fatalf("ts client output %s: %v", out, err)
			}
			if got.Text != "This is a simple text response for testing." || len(got.Tools) == 0 {
				t.Errorf("ts client (key %v): %+v", key != "", got)
			}
			if key != "" && !strings.HasPrefix(got.Account, "account ") || key == "" && got.AnonErr == "" {
				t.Errorf("ts client user tool (key %v): %+v", key != "", got)
			}
		}
	})

	t.Run("inspector-cli", func(t *testing.T) {
		cli := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
		out := runNode(t, dir, node, 0, cli, "--cli", st.URL, "--transport", "http", "--method", "tools/list")
		if !bytes.Contains(out, []byte("test_simple_text")) {
			t.Errorf("inspector tools/list: %s", out)
		}
		out = runNode(t, dir, node, 0, cli, "--cli", st.URL, "--transport", "http", "--method", "tools/call", "--tool-name", "test_simple_text")
		if !bytes.Contains(out, []byte("This is a simple text response")) {
			t.Errorf("inspector tools/call: %s", out)
		}
		// The CLI's exit codes: 5 for an unknown tool, 3 when the server
		// answers 401 (a user tool called without a key).
		runNode(t, dir, node, 5, cli, "--cli", st.URL, "--transport", "http", "--method", "tools/call", "--tool-name", "no_such_tool")
		runNode(t, dir, node, 3, cli, "--cli", st.URL, "--transport", "http", "--method", "tools/call", "--tool-name", "my_account")
		runNode(t, dir, node, 0, cli, "--cli", st.URL, "--transport", "http", "--header", "Authorization: Bearer "+st.Key,
			"--method", "tools/call", "--tool-name", "my_account")
	})
}

// TestMCPConformance runs the official conformance suite against the full
// stack: the frozen requirements of 2025-11-25 and 2026-07-28, plus the
// scenarios of the two older legacy revisions. The baseline lists only what
// we do not advertise (and the fixture gap it names).
func TestMCPConformance(t *testing.T) {
	st := startMCPStack(t)
	node, dir := nodeTools(t)
	suite := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	baseline, accepted := devBaseline(t, "conformance-baseline.yml")
	for _, run := range [][2]string{
		{"--requirements", "2025-11-25"}, {"--requirements", "2026-07-28"},
		{"--spec-version", "2025-06-18"}, {"--spec-version", "2025-03-26"},
	} {
		t.Run(run[1], func(t *testing.T) {
			results := t.TempDir()
			out := runNode(t, dir, node, 0, suite, "server", "--url", st.URL, run[0], run[1],
				"--expected-failures", baseline, "-o", results)
			t.Logf("conformance %s:\n%s", run[1], out)
			checkUnscored(t, results, run[1], accepted, out)
		})
	}
}

// runNode runs a node script and checks its exit code, showing the output
// when it differs.
func runNode(t *testing.T, dir, node string, wantCode int, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	// The Inspector keeps a server catalog; it must not write to $HOME.
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "MCP_CATALOG_PATH="+filepath.Join(t.TempDir(), "mcp.json"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running node %v: %v", args, err)
	}
	if code != wantCode {
		t.Fatalf("node %v exited %d, want %d:\n%s", args, code, wantCode, out.Bytes())
	}
	return out.Bytes()
}

// lastLine returns the last non-empty line of out.
func lastLine(out []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	return lines[len(lines)-1]
}

// bearer adds an API key to every request.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}
