package stack

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	agentsvc "github.com/mirobody/mirobody-go/agent-svc"
	"github.com/mirobody/mirobody-go/gateway"
	registrysvc "github.com/mirobody/mirobody-go/registry-svc"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	must(t, err)
	names := make([]string, len(res.Tools))
	for i, tl := range res.Tools {
		names[i] = tl.Name
	}
	return names
}

// Data gating end to end (registry-svc/design.md "Data gating"): a fresh account does not see the
// gated built-ins, an anonymous caller does; `mirobody data import
// --health` makes query_health_indicators appear, and the account's open
// MCP session gets notifications/tools/list_changed.
func TestDataGatingEndToEnd(t *testing.T) {
	natsURL := servicetest.NATS(t)
	db := servicetest.Postgres(t, nil)
	log := servicetest.Logger(t)
	cfg := testConfig(t, natsURL, db.DSN)
	cfg.MCPToolDirs = []string{"builtin"}
	gw := gateway.New(gateway.Options{Config: cfg, Log: log})
	startGroup(t, vfssvc.New(vfssvc.Options{Config: cfg, Log: log}), registrysvc.New(registrysvc.Options{Config: cfg, Log: log}),
		agentsvc.New(agentsvc.Options{Config: cfg, Log: log}), gw)
	url := "http://" + gw.Addr() + "/mcp"

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const email = "gating@example.com"
	accts := accounts.NewAccounts(servicetest.Client(t, natsURL))
	acct, err := accts.Create(ctx, &accounts.AccountCreateRequest{Email: email})
	must(t, err)
	key, err := accts.CreateKey(ctx, &accounts.KeyCreateRequest{AccountID: acct.ID, Name: "gating"})
	must(t, err)

	anon, err := mcp.NewClient(&mcp.Implementation{Name: "anon", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	must(t, err)
	defer anon.Close()
	if names := toolNames(t, anon); !slices.Contains(names, "query_health_indicators") || !slices.Contains(names, "get_genetic_data") {
		t.Errorf("anonymous tools/list lacks the gated tools: %v", names)
	}

	changed := make(chan struct{}, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "owner", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{key.Key}}}, nil)
	must(t, err)
	defer cs.Close()
	names := toolNames(t, cs)
	if slices.Contains(names, "query_health_indicators") || slices.Contains(names, "get_genetic_data") {
		t.Errorf("a fresh account sees gated tools: %v", names)
	}
	if !slices.Contains(names, "resolve_indicator") {
		t.Errorf("ungated built-ins missing: %v", names)
	}

	t.Setenv("NATS_URL", natsURL)
	var out, errOut bytes.Buffer
	if code := Main(ctx, []string{"data", "import", "--health", "../../examples/health.csv", "--account", email, "--config", "testdata/empty.yaml"}, &out, &errOut); code != 0 {
		t.Fatalf("mirobody data import = %d: %s %s", code, out.String(), errOut.String())
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed after the import")
	}
	names = toolNames(t, cs)
	if !slices.Contains(names, "query_health_indicators") || slices.Contains(names, "get_genetic_data") {
		t.Errorf("after a health import: %v, want query_health_indicators and not get_genetic_data", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "query_health_indicators", Arguments: map[string]any{"mode": "latest"}})
	must(t, err)
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("query_health_indicators: %+v", res)
	}
	if tx, ok := res.Content[0].(*mcp.TextContent); !ok || !strings.Contains(tx.Text, "Glucose") {
		t.Errorf("latest values do not mention the imported Glucose: %+v", res.Content[0])
	}
}
