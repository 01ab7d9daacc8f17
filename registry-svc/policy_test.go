package registrysvc

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/mcpservers"
	"github.com/mirobody/mirobody-go/services/vfs/userdata"
	"github.com/mirobody/mirobody-go/services/wire"
)

func TestVisibility(t *testing.T) {
	all := []string{"add", "echo", "nothing"}
	tests := []struct {
		name    string
		keys    map[string]string
		deep    []string // visible to DEEP, among all
		base    []string // visible to BASE, among all
		hiddenD string   // a DEEP call that must be not_found
	}{
		{name: "whitelist only", keys: map[string]string{"ALLOWED_TOOLS_DEEP": "echo,add"},
			deep: []string{"add", "echo"}, base: all, hiddenD: "nothing"},
		{name: "blacklist only", keys: map[string]string{"DISALLOWED_TOOLS_DEEP": "echo"},
			deep: []string{"add", "nothing"}, base: all, hiddenD: "echo"},
		{name: "both, blacklist wins", keys: map[string]string{"ALLOWED_TOOLS_DEEP": "echo,add", "DISALLOWED_TOOLS_DEEP": "echo", "DISALLOWED_TOOLS_BASE": "add"},
			deep: []string{"add"}, base: []string{"echo", "nothing"}, hiddenD: "echo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.keys["MCP_TOOL_DIRS"] = "testdata/calls"
			tt.keys["PYTHON_WORKERS"] = "1"
			e := start(t, tt.keys)
			pick := func(names []string) []string {
				var out []string
				for _, n := range names {
					if slices.Contains(all, n) {
						out = append(out, n)
					}
				}
				return out
			}
			deep := registry.Caller{AccountID: "a", Agent: agent.AgentDeep}
			base := registry.Caller{AccountID: "a", Agent: agent.AgentBase}
			if got := pick(e.names(t, deep)); !slices.Equal(got, tt.deep) {
				t.Errorf("DEEP sees %v, want %v", got, tt.deep)
			}
			if got := pick(e.names(t, base)); !slices.Equal(got, tt.base) {
				t.Errorf("BASE sees %v, want %v", got, tt.base)
			}
			if got := pick(e.names(t, registry.Caller{AccountID: "a"})); !slices.Equal(got, all) {
				t.Errorf("plain client sees %v, want every tool", got)
			}
			if _, err := e.call(t, deep, tt.hiddenD, `{"text": "x"}`); !wire.IsCode(err, wire.NotFound) {
				t.Errorf("DEEP call of hidden %s: got %v, want not_found", tt.hiddenD, err)
			}
			if _, err := e.call(t, registry.Caller{AccountID: "a"}, "echo", `{"text": "x"}`); err != nil {
				t.Errorf("plain client call: %v", err)
			}
		})
	}
}

// kindsStub serves vfs.data.kinds on the test's NATS from a map.
type kindsStub struct {
	mu    sync.Mutex
	kinds map[string][]string
	calls int
}

func (k *kindsStub) set(account string, kinds ...string) {
	k.mu.Lock()
	k.kinds[account] = kinds
	k.mu.Unlock()
}

func (k *kindsStub) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.calls
}

func serveKinds(t *testing.T, url string) *kindsStub {
	t.Helper()
	stub := &kindsStub{kinds: map[string][]string{}}
	ws, err := wire.NewService(servicetest.Conn(t, url), wire.ServiceOptions{Name: "vfs", Version: "0.0.1", Log: servicetest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Stop(context.Background()) })
	err = wire.Serve(ws, userdata.Kinds, func(_ context.Context, req *userdata.DataKindsRequest) (*userdata.DataKindsResponse, error) {
		stub.mu.Lock()
		defer stub.mu.Unlock()
		stub.calls++
		return &userdata.DataKindsResponse{Kinds: append([]string{}, stub.kinds[req.AccountID]...)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Nobody here has external MCP servers.
	err = wire.Serve(ws, mcpservers.List, func(context.Context, *mcpservers.MCPServerListRequest) (*mcpservers.MCPServerListResponse, error) {
		return &mcpservers.MCPServerListResponse{Servers: []mcpservers.MCPServer{}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return stub
}

func TestDataGating(t *testing.T) {
	url := servicetest.NATS(t)
	stub := serveKinds(t, url)
	e := startOn(t, url, map[string]string{"MCP_TOOL_DIRS": "testdata/calls", "PYTHON_WORKERS": "1"})
	bob := registry.Caller{AccountID: "acct-bob"}
	stub.set("acct-alice", userdata.KindHealth)

	has := func(c registry.Caller) bool { return slices.Contains(e.names(t, c), "health_summary") }
	if !has(anon) {
		t.Error("anonymous callers must see gated tools")
	}
	if !has(alice) {
		t.Error("alice holds health data but does not see health_summary")
	}
	if has(bob) {
		t.Error("bob holds no health data but sees health_summary")
	}
	before := stub.count()
	_ = has(bob)
	if stub.count() != before {
		t.Error("the data kinds answer was not cached")
	}

	r, err := e.call(t, bob, "health_summary", `{}`)
	if err != nil || r.IsError || !strings.Contains(text(r), "No health data") {
		t.Errorf("bob's call: %v %v, want a normal no-data result", r, err)
	}
	if r, err := e.call(t, alice, "health_summary", `{}`); err != nil || text(r) != "health data for acct-alice" {
		t.Errorf("alice's call: %v %v", r, err)
	}
	if _, err := e.call(t, anon, "health_summary", `{}`); !wire.IsCode(err, wire.Unauthenticated) {
		t.Errorf("anonymous call: got %v, want unauthenticated", err)
	}

	stub.set("acct-bob", userdata.KindHealth)
	if err := userdata.DataChanged.For("acct-bob").Publish(context.Background(), e.wire, &userdata.DataChangedEvent{AccountID: "acct-bob", Kinds: []string{userdata.KindHealth}}); err != nil {
		t.Fatal(err)
	}
	servicetest.Eventually(t, 2*time.Second, func() bool { return has(bob) }, "bob sees health_summary after importing data")
}

func TestDataProbeFailureListsTool(t *testing.T) {
	e := start(t, map[string]string{"MCP_TOOL_DIRS": "testdata/calls", "PYTHON_WORKERS": "1"})
	if !slices.Contains(e.names(t, alice), "health_summary") {
		t.Error("with vfs.data.kinds unreachable the gated tool must stay listed")
	}
	if !strings.Contains(e.logs.String(), "data kinds probe failed") {
		t.Error("the probe failure was not logged")
	}
}

// A name in a visibility list that names no tool is a start-up warning;
// the Deep agent's own tools and external tools are not unknown.
func TestVisibilityUnknownNames(t *testing.T) {
	v := Visibility{
		Allowed:    map[agent.Name][]string{agent.AgentDeep: {"add", "read_file", "gh__issues"}, agent.AgentBase: {"read_file"}},
		Disallowed: map[agent.Name][]string{agent.AgentDeep: {"js_eval", "task", "write_todos", "ad"}},
	}
	log, logs := servicetest.CaptureLogger(t)
	v.warnUnknown(func(name string) bool { return name == "add" }, log)
	got := logs.String()
	if !strings.Contains(got, "key=DISALLOWED_TOOLS_DEEP tools=[ad]") || !strings.Contains(got, "key=ALLOWED_TOOLS_BASE tools=[read_file]") ||
		strings.Count(got, "do not exist") != 2 {
		t.Errorf("logs %q", got)
	}
}
