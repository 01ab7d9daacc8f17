package stack

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/gateway"
	registrysvc "github.com/mirobody/mirobody-go/registry-svc"
	"github.com/mirobody/mirobody-go/services/servicetest"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

// TestListsFollowChangeEvents: the gateway reuses a stable tools/list
// answer (anonymous, and an account without servers when no tool is gated)
// without asking the registry (gateway/design.md "List tail"), and a client
// told notifications/tools/list_changed gets the new list on its very next
// tools/list: after a hot reload for everyone, after adding a server for
// that account only.
func TestListsFollowChangeEvents(t *testing.T) {
	tools := t.TempDir()
	tool := func(name string) []byte {
		return []byte("def " + name + "(city: str) -> str:\n    \"\"\"Say the city.\"\"\"\n    return city\n")
	}
	must(t, os.WriteFile(filepath.Join(tools, "first.py"), tool("first_tool"), 0o644))
	natsURL := servicetest.NATS(t)
	db := servicetest.Postgres(t, nil)
	log := servicetest.Logger(t)
	cfg := testConfig(t, natsURL, db.DSN)
	cfg.MCPToolDirs, cfg.ToolsWatch, cfg.PythonWorkers = []string{tools}, true, 1
	cfg.MCPClientAllowPriv = true
	gw := gateway.New(gateway.Options{Config: cfg, Log: log})
	startGroup(t, vfssvc.New(vfssvc.Options{Config: cfg, Log: log}), registrysvc.New(registrysvc.Options{Config: cfg, Log: log}), gw)
	base := "http://" + gw.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	aliceKey := newAccountKey(ctx, t, natsURL, "trust-alice@example.com")

	connect := func(hc *http.Client) (*mcp.ClientSession, chan struct{}) {
		changed := make(chan struct{}, 16)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
		}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc}, nil)
		must(t, err)
		t.Cleanup(func() { _ = cs.Close() })
		return cs, changed
	}
	anon, anonChanged := connect(http.DefaultClient)
	alice, aliceChanged := connect(&http.Client{Transport: bearer{aliceKey}})
	for range 3 { // the later lists are the reused answer
		for _, cs := range []*mcp.ClientSession{anon, alice} {
			if names := toolNames(t, cs); !slices.Equal(names, []string{"first_tool"}) {
				t.Fatalf("tools %v, want first_tool", names)
			}
		}
	}

	must(t, os.WriteFile(filepath.Join(tools, "second.py"), tool("second_tool"), 0o644))
	waitChanged(t, anonChanged, "a hot reload (anonymous)")
	waitChanged(t, aliceChanged, "a hot reload (alice)")
	for _, cs := range []*mcp.ClientSession{anon, alice} {
		if names := toolNames(t, cs); !slices.Equal(names, []string{"first_tool", "second_tool"}) {
			t.Errorf("tools after the reload %v, want first_tool and second_tool", names)
		}
	}

	drain(anonChanged)
	drain(aliceChanged)
	weather := servicetest.NewMCPServer(t, servicetest.MCPServerOptions{})
	textTool(weather, "forecast", "sunny in ")
	if code, body := apiJSON(t, http.MethodPost, base+"/api/mcp-servers", aliceKey, map[string]any{"name": "weather", "url": weather.URL}); code != http.StatusCreated {
		t.Fatalf("adding the external server: %d %s", code, body)
	}
	waitChanged(t, aliceChanged, "alice added a server")
	if names := toolNames(t, alice); !slices.Contains(names, "weather__forecast") {
		t.Errorf("alice's tools after adding a server: %v", names)
	}
	if names := toolNames(t, anon); slices.Contains(names, "weather__forecast") {
		t.Errorf("an anonymous caller sees alice's server: %v", names)
	}
}
