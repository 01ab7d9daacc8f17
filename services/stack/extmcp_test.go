package stack

import (
	"bytes"
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

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/gateway"
	registrysvc "github.com/mirobody/mirobody-go/registry-svc"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

// apiJSON sends one /api request with body encoded as JSON (nil: none).
func apiJSON(t *testing.T, method, url, key string, body any) (int, []byte) {
	t.Helper()
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	return apiDo(t, method, url, key, string(b))
}

// textTool adds a tool that answers prefix + its text argument.
func textTool(s *servicetest.MCPServer, name, prefix string) {
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s.Server, &mcp.Tool{Name: name, Description: "Answer " + prefix},
		func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: prefix + a.Text}}}, nil, nil
		})
}

func waitChanged(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("no notifications/tools/list_changed after %s", what)
	}
}

func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// TestExternalServersEndToEnd: an account adds external MCP servers over
// /api/mcp-servers; their tools show in that account's tools/list only, a
// call goes through with the server's own credential (never the Mirobody
// key), GET never returns secrets and the database holds them encrypted;
// a list_changed from a server, a server going down and a server switched
// off reach the account's MCP session; the CLI adds, lists and removes.
func TestExternalServersEndToEnd(t *testing.T) {
	natsURL := servicetest.NATS(t)
	db := servicetest.Postgres(t, nil)
	log, logs := servicetest.CaptureLogger(t)
	cfg := testConfig(t, natsURL, db.DSN)
	cfg.MCPToolDirs = []string{"builtin"}
	cfg.MCPClientAllowPriv = true
	cfg.SecretKey = "external-test-secret-key"
	gw := gateway.New(gateway.Options{Config: cfg, Log: log})
	startGroup(t, vfssvc.New(vfssvc.Options{Config: cfg, Log: log}),
		registrysvc.New(registrysvc.Options{Config: cfg, Log: log, ExternalRefresh: 100 * time.Millisecond}), gw)
	base := "http://" + gw.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	newKey := func(email string) string { return newAccountKey(ctx, t, natsURL, email) }
	aliceKey, bobKey := newKey("alice@example.com"), newKey("bob@example.com")

	weather := servicetest.NewMCPServer(t, servicetest.MCPServerOptions{Token: "ext-token"})
	textTool(weather, "forecast", "sunny in ")
	notes := servicetest.NewMCPServer(t, servicetest.MCPServerOptions{Headers: map[string]string{"X-Api-Key": "notes-key"}})
	textTool(notes, "note", "noted: ")

	// Add: 201 with the server object, its health from a first connection.
	code, body := apiJSON(t, http.MethodPost, base+"/api/mcp-servers", aliceKey, map[string]any{"name": "weather", "url": weather.URL + "/mcp", "access_token": "ext-token"})
	if code != http.StatusCreated {
		t.Fatalf("POST weather: %d %s", code, body)
	}
	var added map[string]any
	must(t, json.Unmarshal(body, &added))
	keys := make([]string, 0, len(added))
	for k := range added {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	health, _ := added["health"].(map[string]any)
	if !slices.Equal(keys, []string{"auth", "enabled", "health", "name", "url"}) || added["auth"] != "bearer" || added["enabled"] != true ||
		health["status"] != "ok" || health["tools"] != 1.0 || health["checked_at"] == nil {
		t.Errorf("POST weather answered %s", body)
	}
	code, body = apiJSON(t, http.MethodPost, base+"/api/mcp-servers", aliceKey, map[string]any{"name": "notes", "url": notes.URL, "headers": map[string]string{"X-Api-Key": "notes-key"}})
	if code != http.StatusCreated || !strings.Contains(string(body), `"auth":"headers"`) {
		t.Fatalf("POST notes: %d %s", code, body)
	}
	for _, tc := range []struct {
		body map[string]any
		want int
	}{
		{map[string]any{"name": "weather", "url": weather.URL}, http.StatusConflict},
		{map[string]any{"name": "Bad Name", "url": weather.URL}, http.StatusBadRequest},
		{map[string]any{"name": "x", "url": "ftp://example.com"}, http.StatusBadRequest},
		{map[string]any{"name": "x", "url": weather.URL, "headers": map[string]string{"Host": "evil"}}, http.StatusBadRequest},
	} {
		if code, body := apiJSON(t, http.MethodPost, base+"/api/mcp-servers", aliceKey, tc.body); code != tc.want {
			t.Errorf("POST %v: %d %s, want %d", tc.body, code, body, tc.want)
		}
	}

	// GET never returns secrets, and the database holds them encrypted.
	code, body = apiJSON(t, http.MethodGet, base+"/api/mcp-servers", aliceKey, nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"name":"notes"`) || !strings.Contains(string(body), `"name":"weather"`) {
		t.Fatalf("GET: %d %s", code, body)
	}
	if strings.Contains(string(body), "ext-token") || strings.Contains(string(body), "notes-key") || strings.Contains(string(body), "X-Api-Key") {
		t.Errorf("GET returns secrets: %s", body)
	}
	if _, body := apiJSON(t, http.MethodGet, base+"/api/mcp-servers", bobKey, nil); string(body) != `{"servers":[]}`+"\n" {
		t.Errorf("bob's servers: %s", body)
	}
	conn, err := pgx.Connect(ctx, db.DSN)
	must(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT secrets FROM mcp_servers`)
	must(t, err)
	sealed, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	must(t, err)
	for _, s := range sealed {
		if len(s) == 0 || bytes.Contains(s, []byte("ext-token")) || bytes.Contains(s, []byte("notes-key")) {
			t.Errorf("secrets stored in the clear or missing: %q", s)
		}
	}

	// tools/list: the account's own servers, namespaced; not bob's.
	changed := make(chan struct{}, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	alice, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer{aliceKey}}}, nil)
	must(t, err)
	defer alice.Close()
	bob, err := mcp.NewClient(&mcp.Implementation{Name: "bob", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer{bobKey}}}, nil)
	must(t, err)
	defer bob.Close()
	if names := toolNames(t, alice); !slices.Contains(names, "weather__forecast") || !slices.Contains(names, "notes__note") || !slices.Contains(names, "resolve_indicator") {
		t.Fatalf("alice's tools: %v", names)
	}
	if names := toolNames(t, bob); slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "__") }) {
		t.Errorf("bob sees alice's servers: %v", names)
	}

	// A call goes through with the server's own credential only.
	res, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "weather__forecast", Arguments: map[string]any{"text": "Paris"}})
	must(t, err)
	if tx, ok := res.Content[0].(*mcp.TextContent); res.IsError || !ok || tx.Text != "sunny in Paris" {
		t.Errorf("weather__forecast: %+v", res)
	}
	res, err = alice.CallTool(ctx, &mcp.CallToolParams{Name: "notes__note", Arguments: map[string]any{"text": "x"}})
	must(t, err)
	if tx, ok := res.Content[0].(*mcp.TextContent); res.IsError || !ok || tx.Text != "noted: x" {
		t.Errorf("notes__note: %+v", res)
	}
	for _, a := range append(weather.Authorizations(), notes.Authorizations()...) {
		if strings.Contains(a, "mb_") || strings.Contains(a, aliceKey) {
			t.Errorf("an external server got a Mirobody credential: %q", a)
		}
	}
	if slices.ContainsFunc(weather.Authorizations(), func(a string) bool { return a != "Bearer ext-token" }) {
		t.Errorf("weather got Authorization %v", weather.Authorizations())
	}
	if slices.ContainsFunc(notes.Authorizations(), func(a string) bool { return a != "" }) {
		t.Errorf("notes got Authorization %v", notes.Authorizations())
	}
	if res, err := bob.CallTool(ctx, &mcp.CallToolParams{Name: "weather__forecast", Arguments: map[string]any{"text": "x"}}); err == nil && !res.IsError {
		t.Errorf("bob called alice's server: %+v", res)
	}

	// list_changed from the external server is forwarded.
	drain(changed)
	textTool(weather, "alerts", "no alerts for ")
	waitChanged(t, changed, "the weather server added a tool")
	servicetest.Eventually(t, 10*time.Second, func() bool { return slices.Contains(toolNames(t, alice), "weather__alerts") }, "weather__alerts listed")

	// A server that goes down costs only its tools; health says down.
	drain(changed)
	notes.SetDown(true)
	waitChanged(t, changed, "the notes server went down")
	servicetest.Eventually(t, 10*time.Second, func() bool {
		names := toolNames(t, alice)
		return !slices.Contains(names, "notes__note") && slices.Contains(names, "weather__forecast")
	}, "notes__note dropped, weather__forecast kept")
	_, body = apiJSON(t, http.MethodGet, base+"/api/mcp-servers", aliceKey, nil)
	var list struct {
		Servers []struct {
			Name   string
			Health struct{ Status, Error string }
		}
	}
	must(t, json.Unmarshal(body, &list))
	for _, s := range list.Servers {
		if want := map[string]string{"notes": "down", "weather": "ok"}[s.Name]; s.Health.Status != want || (want == "down") != (s.Health.Error != "") {
			t.Errorf("health of %s: %+v, want %s", s.Name, s.Health, want)
		}
	}
	res, err = alice.CallTool(ctx, &mcp.CallToolParams{Name: "weather__forecast", Arguments: map[string]any{"text": "Oslo"}})
	must(t, err)
	if res.IsError {
		t.Errorf("weather failed while notes is down: %+v", res)
	}

	// Switched off: gone from the list, and the session is told.
	drain(changed)
	code, body = apiJSON(t, http.MethodPatch, base+"/api/mcp-servers/weather", aliceKey, map[string]any{"enabled": false})
	if code != http.StatusOK || !strings.Contains(string(body), `"enabled":false`) {
		t.Errorf("PATCH weather: %d %s", code, body)
	}
	waitChanged(t, changed, "weather was switched off")
	if names := toolNames(t, alice); slices.Contains(names, "weather__forecast") {
		t.Errorf("a disabled server's tools are listed: %v", names)
	}
	if code, body := apiJSON(t, http.MethodDelete, base+"/api/mcp-servers/notes", aliceKey, nil); code != http.StatusNoContent {
		t.Errorf("DELETE notes: %d %s", code, body)
	}
	if code, _ := apiJSON(t, http.MethodDelete, base+"/api/mcp-servers/notes", aliceKey, nil); code != http.StatusNotFound {
		t.Errorf("DELETE notes again: %d, want 404", code)
	}
	if code, _ := apiJSON(t, http.MethodDelete, base+"/api/mcp-servers/weather", bobKey, nil); code != http.StatusNotFound {
		t.Errorf("bob deleting alice's server: %d, want 404", code)
	}

	// The CLI: mirobody mcp add, ls, rm.
	t.Setenv("NATS_URL", natsURL)
	tokenFile := filepath.Join(t.TempDir(), "token")
	must(t, os.WriteFile(tokenFile, []byte("ext-token\n"), 0o600))
	cli := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := Main(ctx, append(append([]string{"mcp"}, args...), "--account", "alice@example.com", "--config", "testdata/empty.yaml"), &out, &errOut); code != 0 {
			t.Fatalf("mirobody mcp %v = %d: %s %s", args, code, out.String(), errOut.String())
		}
		return out.String()
	}
	if out := cli("add", "--name", "cli", "--url", weather.URL, "--token-file", tokenFile); !strings.Contains(out, "added cli") || !strings.Contains(out, "ok (2 tools)") {
		t.Errorf("mcp add: %s", out)
	}
	if out := cli("ls"); !strings.Contains(out, "cli") || !strings.Contains(out, "bearer") || !strings.Contains(out, "weather") || strings.Contains(out, "ext-token") {
		t.Errorf("mcp ls: %s", out)
	}
	if names := toolNames(t, alice); !slices.Contains(names, "cli__forecast") {
		t.Errorf("after mcp add: %v", names)
	}
	if out := cli("rm", "--name", "cli"); !strings.Contains(out, "removed cli") {
		t.Errorf("mcp rm: %s", out)
	}
	if out := cli("ls"); strings.Contains(out, "cli ") {
		t.Errorf("mcp ls after rm: %s", out)
	}
	for _, secret := range []string{"ext-token", "notes-key", aliceKey} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("a secret is in the logs: %s", secret)
		}
	}
}

// TestExternalChatTurnServer: a chat request's mcp_servers are the Deep
// agent's tools for that turn only, callable directly and from js_eval,
// with the given token.
func TestExternalChatTurnServer(t *testing.T) {
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		if r.LastUser() == "without servers" {
			return scripted.Step{Text: fmt.Sprintf("has tool: %v", r.HasTool("turnsrv__echo"))}, nil
		}
		switch r.StepsSinceUser() {
		case 0:
			if !r.HasTool("turnsrv__echo") {
				return scripted.Step{}, fmt.Errorf("turnsrv__echo not offered: %v", r.Tools)
			}
			code, _ := json.Marshal(map[string]string{"code": `return await tools.turnsrv__echo({text: "repl"})`})
			return scripted.Step{Calls: []scripted.Call{{Name: "turnsrv__echo", Args: `{"text":"direct"}`}, {Name: "js_eval", Args: string(code)}}}, nil
		case 1:
			res := r.ToolResults()
			if len(res) != 2 || res[0].Content != "echo: direct" || !strings.Contains(res[1].Content, "echo: repl") {
				return scripted.Step{}, fmt.Errorf("results %+v", res)
			}
			return scripted.Step{Text: "both calls worked"}, nil
		}
		return scripted.Step{}, fmt.Errorf("unexpected step %d", r.StepsSinceUser())
	})
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, func(c *conf.Config) { c.MCPClientAllowPriv = true })
	ext := servicetest.NewMCPServer(t, servicetest.MCPServerOptions{Token: "turn-token"})
	textTool(ext, "echo", "echo: ")

	evs := st.chat(t, map[string]any{"question": "use the turn server", "provider": "oa",
		"mcp_servers": []map[string]string{{"name": "turnsrv", "url": ext.URL, "access_token": "turn-token"}}})
	if got := textOf(evs); !strings.Contains(got, "both calls worked") {
		t.Fatalf("turn with mcp_servers: %q (%+v)", got, evs)
	}
	if slices.ContainsFunc(ext.Authorizations(), func(a string) bool { return a != "Bearer turn-token" }) {
		t.Errorf("the turn's server got Authorization %v", ext.Authorizations())
	}
	evs = st.chat(t, map[string]any{"question": "without servers", "provider": "oa"})
	if got := textOf(evs); !strings.Contains(got, "has tool: false") {
		t.Errorf("a later turn without mcp_servers: %q", got)
	}
	if code, body := apiJSON(t, http.MethodPost, st.URL+"/api/chat", st.Key, map[string]any{"question": "x",
		"mcp_servers": []map[string]string{{"name": "Bad Name", "url": ext.URL}}}); code != http.StatusBadRequest {
		t.Errorf("a bad mcp_servers entry: %d %s", code, body)
	}
}
