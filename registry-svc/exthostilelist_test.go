package registrysvc

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/registry"
)

// sdkServer serves s (a real Go SDK server) on loopback until cleanup.
func sdkServer(t *testing.T, s *mcp.Server) string {
	t.Helper()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

func noop(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{}, nil
}

// turnHealth is the health of a chat turn's server of alice, which only
// the registry's own sessions know.
func (e *env) turnHealth(t *testing.T, name string) registry.Health {
	t.Helper()
	x := e.svc.reg.ext
	x.mu.Lock()
	defer x.mu.Unlock()
	for k, c := range x.conns {
		if k.account == alice.AccountID && k.name == name {
			return c.snapshotHealth()
		}
	}
	t.Fatalf("no session with %s", name)
	return registry.Health{}
}

// TestExternalHostileLists: a server listing 20,000 tools, tools whose
// schemas are not JSON Schema objects, and tools bigger in total than
// EXTERNAL_MAX_RESULT_BYTES add at most what the caps allow to the
// account's list: the rest is left out and said in the server's health,
// the account's list (built-ins included) still answers, and another
// account's list is untouched. (Before: the whole list of the account
// failed, and bad schemas were passed on, which makes the official TS
// SDK's listTools() fail for every tool.)
func TestExternalHostileLists(t *testing.T) {
	e := start(t, map[string]string{"MCP_CLIENT_ALLOW_PRIVATE": "true", "EXTERNAL_MAX_TOOLS": "100", "EXTERNAL_MAX_RESULT_BYTES": "65536"})
	bob := registry.Caller{AccountID: "acct-bob"}
	bobBefore := e.names(t, bob)

	many := mcp.NewServer(&mcp.Implementation{Name: "many", Version: "1"}, nil)
	for i := range 20000 {
		many.AddTool(&mcp.Tool{Name: fmt.Sprintf("t%05d", i), InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
	}

	bad := mcp.NewServer(&mcp.Implementation{Name: "bad", Version: "1"}, nil)
	for name, schema := range map[string]string{
		"good":    `{"type":"object","properties":{"a":{"type":"string"}}}`,
		"badtype": `{"type":"object","properties":{"a":{"type":"nope"}}}`,
		"fileref": `{"type":"object","$ref":"file:///etc/passwd"}`,
		"string":  `{"type":"object"}`, // made a bare string below
		"array":   `{"type":"object"}`, // made an array below
		"notype":  `{"type":"object"}`, // loses its type below
		"badout":  `{"type":"object"}`,
	} {
		tl := &mcp.Tool{Name: name, InputSchema: json.RawMessage(schema)}
		if name == "badout" {
			tl.OutputSchema = json.RawMessage(`{"type":"array"}`)
		}
		bad.AddTool(tl, noop)
	}
	// The SDK refuses such schemas in AddTool, so they are put in its
	// answer, as a hostile server would.
	bad.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				for _, tl := range lr.Tools {
					switch tl.Name {
					case "string":
						tl.InputSchema = "string"
					case "array":
						tl.InputSchema = []any{1}
					case "notype":
						tl.InputSchema = map[string]any{"properties": map[string]any{}}
					}
				}
			}
			return res, err
		}
	})

	// Pages of 2 tools of ~20 KB each: every page is under the cap, the
	// whole list is not.
	wordy := mcp.NewServer(&mcp.Implementation{Name: "wordy", Version: "1"}, &mcp.ServerOptions{PageSize: 2})
	for i := range 10 {
		wordy.AddTool(&mcp.Tool{Name: fmt.Sprintf("w%d", i), Description: strings.Repeat("w", 20000), InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
	}

	turn := []agent.ServerSpec{{Name: "many", URL: sdkServer(t, many)}, {Name: "bad", URL: sdkServer(t, bad)}, {Name: "wordy", URL: sdkServer(t, wordy)}}
	list, err := e.client.List(context.Background(), &registry.ListRequest{Caller: alice, Servers: turn})
	if err != nil {
		t.Fatalf("alice's list with hostile servers: %v", err)
	}
	count := map[string]int{}
	var names []string
	for _, tl := range list.Tools {
		server, _, ok := strings.Cut(tl.Name, registry.ToolSeparator)
		if !ok {
			server = "registry"
		}
		count[server]++
		names = append(names, tl.Name)
		var schema struct{ Type string }
		if err := json.Unmarshal(tl.InputSchema, &schema); err != nil || schema.Type != "object" {
			t.Errorf("%s is listed with inputSchema %s", tl.Name, tl.InputSchema)
		}
	}
	if !slices.Contains(names, "resolve_indicator") || count["many"] != 100 || count["bad"] != 1 || !slices.Contains(names, "bad__good") || count["wordy"] != 3 {
		t.Errorf("tools per server: %v", count)
	}

	for _, tc := range []struct {
		server string
		want   []string
	}{
		{"many", []string{"more than 100 tools (EXTERNAL_MAX_TOOLS)"}},
		{"wordy", []string{"more than 65536 bytes (EXTERNAL_MAX_RESULT_BYTES)"}},
		{"bad", []string{
			`badtype: inputSchema is not a valid JSON Schema`,
			`fileref: inputSchema is not a valid JSON Schema`,
			`string: inputSchema is not a JSON object`,
			`array: inputSchema is not a JSON object`,
			`notype: inputSchema has type (none), not "object"`,
			`badout: outputSchema has type "array", not "object"`,
		}},
	} {
		h := e.turnHealth(t, tc.server)
		if h.Status != registry.HealthOK {
			t.Errorf("health of %s: %+v", tc.server, h)
		}
		for _, w := range tc.want {
			if !slices.ContainsFunc(h.Dropped, func(d string) bool { return strings.Contains(d, w) }) {
				t.Errorf("health of %s: dropped %q, want a line with %q", tc.server, h.Dropped, w)
			}
		}
	}
	if strings.Contains(e.logs.String(), "root:") {
		t.Errorf("a schema's reference read a local file")
	}
	if after := e.names(t, bob); !slices.Equal(after, bobBefore) {
		t.Errorf("bob's list changed: %v, was %v", after, bobBefore)
	}
}
