package registrysvc

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/mcpservers"
	"github.com/mirobody/mirobody-go/services/wire"
)

// serversStub serves vfs.mcpservers.list on the test's NATS from memory.
// A list can be held: it reads the servers when it arrives, then waits for
// release before answering, as a slow vfs-svc does.
type serversStub struct {
	mu      sync.Mutex
	servers map[string][]mcpservers.MCPServer
	hold    bool          // the next list is held
	entered chan struct{} // closed when the held list has read the servers
	release chan struct{} // closed to let it answer
}

func serveServers(t *testing.T, url string) *serversStub {
	t.Helper()
	stub := &serversStub{servers: map[string][]mcpservers.MCPServer{}}
	ws, err := wire.NewService(servicetest.Conn(t, url), wire.ServiceOptions{Name: "vfs", Version: "0.0.1", Log: servicetest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Stop(context.Background()) })
	err = wire.Serve(ws, mcpservers.List, func(ctx context.Context, req *mcpservers.MCPServerListRequest) (*mcpservers.MCPServerListResponse, error) {
		stub.mu.Lock()
		resp := &mcpservers.MCPServerListResponse{Servers: slices.Clone(stub.servers[req.AccountID])}
		hold, entered, release := stub.hold, stub.entered, stub.release
		stub.hold = false
		stub.mu.Unlock()
		if hold {
			close(entered)
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return resp, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return stub
}

// set stores the account's servers.
func (s *serversStub) set(account string, servers ...mcpservers.MCPServer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.servers[account] = servers
}

// holdNextList makes the next list wait until release is called; entered
// is closed once it has read the servers.
func (s *serversStub) holdNextList() (entered <-chan struct{}, release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold, s.entered, s.release = true, make(chan struct{}), make(chan struct{})
	return s.entered, sync.OnceFunc(func() { close(s.release) })
}

// TestExternalConfigReadOvertakenByChange: a read of an account's servers
// that was in flight when the account's change event came must not be
// kept. The read is held in vfs-svc while the servers change there, the
// event's handler (invalidate) runs and another list reads the new
// servers; then the held read answers the old ones. (Before: they were
// stored over the new ones and served for configTTL, 5 minutes, to
// tools/list, tools/call and the Stable answer the gateway reuses.) The
// event is handled by a direct call: the one this replica publishes
// itself arrives at a moment the test cannot choose.
func TestExternalConfigReadOvertakenByChange(t *testing.T) {
	tests := []struct {
		name           string
		before, change bool // alice has the server before and after the change
	}{
		{"server added", false, true},
		{"server removed", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := servicetest.NATS(t)
			stub := serveServers(t, url)
			// No data-gated tools: an account's list is Stable exactly
			// when it is known to have no stored server.
			e := startOn(t, url, map[string]string{"MCP_TOOL_DIRS": "testdata/second", "PYTHON_WORKERS": "1", "MCP_CLIENT_ALLOW_PRIVATE": "true"})
			srv := echoServer(t, servicetest.MCPServerOptions{})
			ext := mcpservers.MCPServer{AccountID: alice.AccountID, Name: "ext", URL: srv.URL, Auth: registry.AuthNone, Enabled: true}
			servers := func(has bool) []mcpservers.MCPServer {
				if has {
					return []mcpservers.MCPServer{ext}
				}
				return nil
			}
			ctx := context.Background()
			// check lists alice's tools: ext__echo must be there, and the
			// list not Stable, exactly when she has the server; no session
			// with it may be open otherwise.
			check := func(when string) {
				t.Helper()
				resp, err := registry.ToolsList.Call(ctx, e.wire, &registry.ListRequest{Caller: alice})
				if err != nil {
					t.Fatal(err)
				}
				names := toolList(resp.Tools)
				if got := slices.Contains(names, "ext__echo"); got != tt.change {
					t.Errorf("%s: ext__echo listed %v, want %v: %v", when, got, tt.change, names)
				}
				if resp.Stable == tt.change {
					t.Errorf("%s: the list is stable %v, but alice has servers: %v", when, resp.Stable, tt.change)
				}
				if open := e.svc.reg.ext.cached(connKey{account: alice.AccountID, name: "ext"}); open != tt.change {
					t.Errorf("%s: a session with ext is open: %v, want %v", when, open, tt.change)
				}
			}

			stub.set(alice.AccountID, servers(tt.before)...)
			entered, release := stub.holdNextList()
			t.Cleanup(release)
			listed := make(chan error, 1)
			go func() {
				// The list that started before the change may answer
				// either way; only what it leaves behind is checked.
				_, err := registry.ToolsList.Call(ctx, e.wire, &registry.ListRequest{Caller: alice})
				listed <- err
			}()
			<-entered
			stub.set(alice.AccountID, servers(tt.change)...)
			e.svc.reg.ext.invalidate(alice.AccountID) // events.registry.changed.<account>
			check("read after the change")
			release()
			if err := <-listed; err != nil {
				t.Fatalf("the list in flight: %v", err)
			}
			check("once the old read answered")
		})
	}
}
