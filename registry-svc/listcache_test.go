package registrysvc

import (
	"context"
	"slices"
	"testing"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/registry"
)

func TestListETag(t *testing.T) {
	e := start(t, map[string]string{"MCP_TOOL_DIRS": "testdata/calls", "PYTHON_WORKERS": "1", "ALLOWED_TOOLS_DEEP": "echo"})
	ctx := context.Background()
	raw := func(c registry.Caller, etag string) *registry.ListResponse {
		t.Helper()
		r, err := registry.ToolsList.Call(ctx, e.wire, &registry.ListRequest{Caller: c, IfNoneMatch: etag})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	bob := registry.Caller{AccountID: "acct-bob"}
	full := raw(alice, "")
	if full.ETag == "" || full.NotModified || len(full.Tools) == 0 {
		t.Fatalf("first list: etag %q, not modified %v, %d tools", full.ETag, full.NotModified, len(full.Tools))
	}
	tests := []struct {
		name        string
		caller      registry.Caller
		etag        string
		notModified bool
	}{
		{"same caller, same etag", alice, full.ETag, true},
		{"another account with the same answer", bob, full.ETag, true},
		{"stale etag", alice, "0000", false},
		{"another visibility profile", registry.Caller{AccountID: "acct-alice", Agent: agent.AgentDeep}, full.ETag, false},
		{"an agent without lists shares the default answer", registry.Caller{AccountID: "acct-alice", Agent: agent.AgentBase}, full.ETag, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := raw(tt.caller, tt.etag)
			if r.NotModified != tt.notModified || (r.NotModified && len(r.Tools) != 0) || (!r.NotModified && len(r.Tools) == 0) {
				t.Errorf("not modified %v with %d tools, want %v", r.NotModified, len(r.Tools), tt.notModified)
			}
		})
	}

	// The typed client revalidates its cached list: the second answer is
	// the cached one, never the empty "not modified" reply.
	first, err := e.client.List(ctx, &registry.ListRequest{Caller: alice})
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.client.List(ctx, &registry.ListRequest{Caller: alice})
	if err != nil {
		t.Fatal(err)
	}
	if second != first || second.NotModified || !slices.EqualFunc(second.Tools, full.Tools, func(a, b registry.Tool) bool { return a.Name == b.Name }) {
		t.Errorf("cached list: same %v, not modified %v, tools %v", second == first, second.NotModified, second.Tools)
	}
	// Another account with the same answer shares the cached copy.
	if bobs, err := e.client.List(ctx, &registry.ListRequest{Caller: bob}); err != nil || bobs != first {
		t.Errorf("bob's list is not the shared answer: %v", err)
	}
}

// TestListStable: an answer is marked stable (reusable until the registry
// announces a change) only when nothing but the registry's own announced
// state decides it: anonymous callers, and accounts known to have no
// servers when no tool is gated on data. The short "not modified" reply
// says the same as the answer it confirms, because each has its own ETag.
func TestListStable(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		dirs   string
		caller registry.Caller
		stable bool
	}{
		{"anonymous, gated tools", "testdata/calls", registry.Caller{}, true},
		{"an account, gated tools (its data kinds decide)", "testdata/calls", alice, false},
		// No vfs-svc here: the account's servers cannot be read, so
		// whether it has any is unknown.
		{"an account whose servers are unknown", "testdata/second", alice, false},
		{"anonymous, no gated tools", "testdata/second", registry.Caller{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t, map[string]string{"MCP_TOOL_DIRS": tt.dirs, "PYTHON_WORKERS": "1"})
			full, err := registry.ToolsList.Call(ctx, e.wire, &registry.ListRequest{Caller: tt.caller})
			if err != nil {
				t.Fatal(err)
			}
			short, err := registry.ToolsList.Call(ctx, e.wire, &registry.ListRequest{Caller: tt.caller, IfNoneMatch: full.ETag})
			if err != nil {
				t.Fatal(err)
			}
			if full.Stable != tt.stable || !short.NotModified || short.Stable != tt.stable {
				t.Errorf("stable %v, not modified %v with stable %v; want stable %v", full.Stable, short.NotModified, short.Stable, tt.stable)
			}
		})
	}
}
