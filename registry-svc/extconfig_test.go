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

// serversStub serves vfs.mcpservers.list, create and delete on the test's
// NATS from memory. A list can be held: it reads the servers when it
// arrives, then waits for release before answering, as a slow vfs-svc does.
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
	err = wire.Serve(ws, mcpservers.Create, func(_ context.Context, req *mcpservers.MCPServerCreateRequest) (*mcpservers.MCPServer, error) {
		stub.mu.Lock()
		defer stub.mu.Unlock()
		m := req.Server
		stub.servers[m.AccountID] = append(stub.servers[m.AccountID], m)
		return &m, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = wire.Serve(ws, mcpservers.Delete, func(_ context.Context, req *mcpservers.MCPServerDeleteRequest) (*mcpservers.MCPServer, error) {
		stub.mu.Lock()
		defer stub.mu.Unlock()
		list := stub.servers[req.AccountID]
		i := slices.IndexFunc(list, func(m mcpservers.MCPServer) bool { return m.Name == req.Name })
		if i < 0 {
			return nil, wire.Errorf(wire.NotFound, "no server %s", req.Name)
		}
		m := list[i]
		stub.servers[req.AccountID] = slices.Delete(list, i, i+1)
		return &m, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return stub
}

// holdNextList makes the next list wait until the returned function is
// called; entered is closed once it has read the servers.
func (s *serversStub) holdNextList() (entered <-chan struct{}, release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold, s.entered, s.release = true, make(chan struct{}), make(chan struct{})
	return s.entered, sync.OnceFunc(func() { close(s.release) })
}

// TestExternalConfigReadOvertakenByChange: a read of an account's servers
// that was in flight when the account changed them must not be kept. The
// read is held in vfs-svc while the change (through registry.servers.*,
// which invalidates and reads again) completes, then answers the old list.
// (Before: the old list was stored over the new one and served for
// configTTL, 5 minutes, to tools/list, tools/call and the Stable answer
// the gateway reuses.)
func TestExternalConfigReadOvertakenByChange(t *testing.T) {
	tests := []struct {
		name    string
		initial bool // alice has the server before the change
		change  func(ctx context.Context, e *env, url string) error
		want    bool // ext__echo listed after it
	}{
		{"server added", false, func(ctx context.Context, e *env, url string) error {
			_, err := e.client.AddServer(ctx, &registry.ServerAddRequest{AccountID: alice.AccountID, Name: "ext", URL: url})
			return err
		}, true},
		{"server removed", true, func(ctx context.Context, e *env, _ string) error {
			_, err := e.client.RemoveServer(ctx, &registry.ServerRemoveRequest{AccountID: alice.AccountID, Name: "ext"})
			return err
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := servicetest.NATS(t)
			stub := serveServers(t, url)
			// No data-gated tools: an account's list is Stable exactly
			// when it is known to have no stored server.
			e := startOn(t, url, map[string]string{"MCP_TOOL_DIRS": "testdata/second", "PYTHON_WORKERS": "1", "MCP_CLIENT_ALLOW_PRIVATE": "true"})
			srv := echoServer(t, servicetest.MCPServerOptions{})
			if tt.initial {
				stub.mu.Lock()
				stub.servers[alice.AccountID] = []mcpservers.MCPServer{{AccountID: alice.AccountID, Name: "ext", URL: srv.URL, Auth: registry.AuthNone, Enabled: true}}
				stub.mu.Unlock()
			}
			ctx := context.Background()

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
			if err := tt.change(ctx, e, srv.URL); err != nil {
				t.Fatalf("changing alice's servers: %v", err)
			}
			release()
			if err := <-listed; err != nil {
				t.Fatalf("the list in flight: %v", err)
			}

			after, err := registry.ToolsList.Call(ctx, e.wire, &registry.ListRequest{Caller: alice})
			if err != nil {
				t.Fatal(err)
			}
			names := toolList(after.Tools)
			if got := slices.Contains(names, "ext__echo"); got != tt.want {
				t.Errorf("after the change ext__echo listed %v, want %v: %v", got, tt.want, names)
			}
			if after.Stable != !tt.want {
				t.Errorf("after the change the list is stable %v, want %v (the account has servers: %v)", after.Stable, !tt.want, tt.want)
			}
		})
	}
}
