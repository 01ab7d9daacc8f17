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

	"github.com/mirobody/mirobody-go/gateway"
	registrysvc "github.com/mirobody/mirobody-go/registry-svc"
	"github.com/mirobody/mirobody-go/services/servicetest"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

// TestExternalHostileServerEndToEnd: an account's stored server that
// lists 2,000 tools, one of them with an inputSchema that is not an
// object, adds EXTERNAL_MAX_TOOLS valid tools to that account's tools/list,
// which the official TypeScript SDK's listTools() accepts (one bad schema
// made it throw for every tool); GET /api/mcp-servers says what was left
// out; another account's list is untouched.
func TestExternalHostileServerEndToEnd(t *testing.T) {
	node, dir := nodeTools(t)
	natsURL := servicetest.NATS(t)
	db := servicetest.Postgres(t, nil)
	log, _ := servicetest.CaptureLogger(t)
	cfg := testConfig(t, natsURL, db.DSN)
	cfg.MCPToolDirs = []string{"builtin"}
	cfg.MCPClientAllowPriv = true
	cfg.SecretKey = "external-test-secret-key"
	cfg.ExtMaxTools = 50
	gw := gateway.New(gateway.Options{Config: cfg, Log: log})
	startGroup(t, vfssvc.New(vfssvc.Options{Config: cfg, Log: log}), registrysvc.New(registrysvc.Options{Config: cfg, Log: log}), gw)
	base := "http://" + gw.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	newKey := func(email string) string { return newAccountKey(ctx, t, natsURL, email) }
	aliceKey, bobKey := newKey("alice@example.com"), newKey("bob@example.com")

	hostile := servicetest.NewMCPServer(t, servicetest.MCPServerOptions{})
	for i := range 2000 {
		textTool(hostile, fmt.Sprintf("t%04d", i), "")
	}
	textTool(hostile, "bad", "")
	// The SDK refuses such a schema in AddTool, so it is put in its
	// answer, as a hostile server would.
	hostile.Server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok {
				for _, tl := range lr.Tools {
					if tl.Name == "bad" {
						tl.InputSchema = "string"
					}
				}
			}
			return res, err
		}
	})

	script := filepath.Join(dir, "ts-list.mjs")
	src, err := os.ReadFile("testdata/ts-list.mjs")
	must(t, err)
	must(t, os.WriteFile(script, src, 0o644))
	tsList := func(key string) []string {
		t.Helper()
		var got struct {
			Tools []string
			Error string
		}
		out := runNode(t, dir, node, 0, script, base+"/mcp", key)
		if err := json.Unmarshal(lastLine(out), &got); err != nil {
			t.Fatalf("ts client output %s: %v", out, err)
		}
		if got.Error != "" {
			t.Fatalf("the TypeScript SDK's listTools() failed: %s", got.Error)
		}
		return got.Tools
	}
	bobBefore := tsList(bobKey)

	code, body := apiJSON(t, http.MethodPost, base+"/api/mcp-servers", aliceKey, map[string]any{"name": "hostile", "url": hostile.URL})
	if code != http.StatusCreated {
		t.Fatalf("POST hostile: %d %s", code, body)
	}
	code, body = apiJSON(t, http.MethodGet, base+"/api/mcp-servers", aliceKey, nil)
	var list struct {
		Servers []struct {
			Name   string
			Health struct {
				Status  string
				Tools   int
				Dropped []string
			}
		}
	}
	must(t, json.Unmarshal(body, &list))
	if code != http.StatusOK || len(list.Servers) != 1 {
		t.Fatalf("GET: %d %s", code, body)
	}
	h := list.Servers[0].Health
	if h.Status != "ok" || h.Tools != 50 || len(h.Dropped) != 2 || !strings.Contains(h.Dropped[0], "bad: inputSchema is not a JSON object") ||
		!strings.Contains(h.Dropped[1], "more than 50 tools (EXTERNAL_MAX_TOOLS)") {
		t.Errorf("health of the hostile server: %s", body)
	}

	names := tsList(aliceKey)
	n := 0
	for _, name := range names {
		if strings.HasPrefix(name, "hostile__") {
			n++
		}
	}
	if n != 50 || slices.Contains(names, "hostile__bad") || !slices.Contains(names, "resolve_indicator") {
		t.Errorf("alice's list has %d hostile tools: %v", n, names)
	}
	if after := tsList(bobKey); !slices.Equal(after, bobBefore) || !slices.Contains(after, "resolve_indicator") {
		t.Errorf("bob's list: %v, was %v", after, bobBefore)
	}
}
