package registrysvc

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/ssrf"
	"github.com/mirobody/mirobody-go/services/wire"
)

// echoServer is a test MCP server with one tool, echo, that answers its
// text back.
func echoServer(t *testing.T, opts servicetest.MCPServerOptions) *servicetest.MCPServer {
	t.Helper()
	s := servicetest.NewMCPServer(t, opts)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s.Server, &mcp.Tool{Name: "echo", Description: "Echo the text.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + a.Text}}}, nil, nil
		})
	return s
}

// TestExternalSSRFPolicy: the address and URL policy itself is tested in
// services/ssrf; here the transport registry-svc dials external servers
// with applies it.
func TestExternalSSRFPolicy(t *testing.T) {
	g := &ssrf.Guard{}
	// Dial time: a URL that got past the add-time check (as after DNS
	// rebinding) is still refused when the address dialled is internal.
	srv := echoServer(t, servicetest.MCPServerOptions{})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	hc := &http.Client{Transport: guardedTransport(g)}
	for _, host := range []string{"localhost", "127.0.0.1"} {
		resp, err := hc.Get("http://" + net.JoinHostPort(host, port) + "/")
		if err == nil {
			resp.Body.Close()
			t.Errorf("dialling %s succeeded through the guard", host)
		} else if !strings.Contains(err.Error(), "refused by the SSRF policy") {
			t.Errorf("dialling %s: %v, want an SSRF refusal", host, err)
		}
	}
	if len(srv.Authorizations()) != 0 {
		t.Errorf("the guarded dial reached the server")
	}
}

// TestExternalAddRefusedBySSRF: without MCP_CLIENT_ALLOW_PRIVATE,
// registry.servers.add refuses internal URLs with a message saying why,
// before anything is stored.
func TestExternalAddRefusedBySSRF(t *testing.T) {
	e := start(t, map[string]string{})
	for _, u := range []string{"http://127.0.0.1:8080/mcp", "http://169.254.169.254/mcp", "http://localhost:8080/mcp"} {
		_, err := e.client.AddServer(context.Background(), &registry.ServerAddRequest{AccountID: "b9f3c1de-0000-4000-8000-000000000001", Name: "x", URL: u})
		if !wire.IsCode(err, wire.InvalidArgument) || !strings.Contains(err.Error(), "refused by the SSRF policy") {
			t.Errorf("adding %s: %v, want invalid_argument refused by the SSRF policy", u, err)
		}
	}
	_, err := e.client.AddServer(context.Background(), &registry.ServerAddRequest{AccountID: "b9f3c1de-0000-4000-8000-000000000001", Name: "Bad Name", URL: "https://example.com/mcp"})
	if !wire.IsCode(err, wire.InvalidArgument) {
		t.Errorf("adding a bad name: %v, want invalid_argument", err)
	}
}

// TestExternalTurnServersBothEras lists and calls the tools of a turn's
// server on the legacy (2025-06-18) and the modern (2026-07-28) protocol:
// the tools are namespaced, the call carries the server's own token, and
// an anonymous caller sees none of them.
func TestExternalTurnServersBothEras(t *testing.T) {
	e := start(t, map[string]string{"MCP_CLIENT_ALLOW_PRIVATE": "true"})
	for _, era := range []struct {
		name, version string
		stateless     bool
	}{{"legacy", "2025-06-18", false}, {"modern", "2026-07-28", true}} {
		t.Run(era.name, func(t *testing.T) {
			srv := echoServer(t, servicetest.MCPServerOptions{Versions: []string{era.version}, Stateless: era.stateless, Token: "turn-token"})
			turn := []agent.ServerSpec{{Name: "ext", URL: srv.URL, AccessToken: "turn-token"}}
			ctx := context.Background()
			list, err := e.client.List(ctx, &registry.ListRequest{Caller: alice, Servers: turn})
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(list.Tools, func(tl registry.Tool) bool { return tl.Name == "ext__echo" })
			if i < 0 {
				t.Fatalf("ext__echo not listed: %v", toolList(list.Tools))
			}
			if tl := list.Tools[i]; tl.Description != "Echo the text." || !strings.Contains(string(tl.InputSchema), `"text"`) || list.ETag != "" {
				t.Errorf("listed as %+v (etag %q)", tl, list.ETag)
			}
			resp, err := e.client.Call(ctx, &registry.CallRequest{Caller: alice, Name: "ext__echo", Arguments: json.RawMessage(`{"text":"hi"}`), Servers: turn})
			if err != nil || resp.IsError || text(resp) != "echo: hi" {
				t.Fatalf("call: %+v %v", resp, err)
			}
			for _, a := range srv.Authorizations() {
				if a != "Bearer turn-token" {
					t.Errorf("the server got Authorization %q", a)
				}
			}
			if v := srv.Versions(); len(v) == 0 || !slices.Contains(v, era.version) {
				t.Errorf("protocol versions seen by the server: %v, want %s", v, era.version)
			}
			anonList, err := e.client.List(ctx, &registry.ListRequest{Caller: anon, Servers: turn})
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(anonList.Tools, func(tl registry.Tool) bool { return strings.HasPrefix(tl.Name, "ext__") }) {
				t.Errorf("an anonymous caller sees a turn's server")
			}
			if _, err := e.client.Call(ctx, &registry.CallRequest{Caller: alice, Name: "ext__echo", Arguments: json.RawMessage(`{"text":"hi"}`)}); !wire.IsCode(err, wire.NotFound) {
				t.Errorf("calling without the turn's servers: %v, want not_found", err)
			}
		})
	}
}

// TestExternalTurnServerDown: a server that fails costs only its tools;
// its call fails as a tool error, and the registry's own tools remain.
func TestExternalTurnServerDown(t *testing.T) {
	e := start(t, map[string]string{"MCP_CLIENT_ALLOW_PRIVATE": "true"})
	up := echoServer(t, servicetest.MCPServerOptions{})
	down := echoServer(t, servicetest.MCPServerOptions{})
	down.SetDown(true)
	// hang accepts requests and never answers: the list's timeout ends it.
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); hang.Close() })
	turn := []agent.ServerSpec{{Name: "up", URL: up.URL}, {Name: "down", URL: down.URL}, {Name: "hang", URL: hang.URL}}
	ctx := context.Background()
	start := time.Now()
	list, err := e.client.List(ctx, &registry.ListRequest{Caller: alice, Servers: turn})
	if err != nil {
		t.Fatal(err)
	}
	names := toolList(list.Tools)
	if !slices.Contains(names, "up__echo") || slices.Contains(names, "down__echo") || slices.Contains(names, "hang__echo") || !slices.Contains(names, "resolve_indicator") {
		t.Errorf("tools with one server down and one hanging: %v", names)
	}
	// Bounded by the per-server list timeout (with slack for a loaded
	// machine), not by the request's deadline.
	if d := time.Since(start); d > 3*listTimeout {
		t.Errorf("the list took %s with a hanging server", d)
	}
	// In backoff, the failed servers cost nothing: the next list is quick.
	start = time.Now()
	if _, err := e.client.List(ctx, &registry.ListRequest{Caller: alice, Servers: turn}); err != nil || time.Since(start) > time.Second {
		t.Errorf("a list during backoff: %v after %s", err, time.Since(start))
	}
	resp, err := e.client.Call(ctx, &registry.CallRequest{Caller: alice, Name: "up__echo", Arguments: json.RawMessage(`{"text":"still"}`), Servers: turn})
	if err != nil || text(resp) != "echo: still" {
		t.Errorf("calling the healthy server: %+v %v", resp, err)
	}
}

func toolList(tools []registry.Tool) []string {
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	return names
}

// An external tool's arguments pass the same object and UTF-8 check as our
// own before they leave for its server (invalid UTF-8 once went through).
func TestExternalArgsChecked(t *testing.T) {
	for _, tc := range []struct {
		args string
		want string
	}{
		{"", "{}"}, {"null", "{}"}, {` {"q":"é"} `, `{"q":"é"}`},
		{`[1]`, "must be a JSON object"}, {`"x"`, "must be a JSON object"},
		{"{\"q\":\"\xff\"}", "not valid UTF-8"},
	} {
		got, err := registry.Arguments("notes__note", json.RawMessage(tc.args))
		if err != nil {
			if !wire.IsCode(err, wire.InvalidArgument) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("registry.Arguments(%q) = %v, want invalid_argument %q", tc.args, err, tc.want)
			}
			continue
		}
		if string(got) != tc.want {
			t.Errorf("registry.Arguments(%q) = %s, want %s", tc.args, got, tc.want)
		}
	}
}
