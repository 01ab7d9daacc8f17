package stack

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mirobody/mirobody-go/gateway"
	registrysvc "github.com/mirobody/mirobody-go/registry-svc"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/svc"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

// mcpRow is one server as the MCP servers page shows it.
type mcpRow struct {
	Name     string `json:"name"`
	Health   string `json:"health"`
	Status   string `json:"status"`
	Enabled  bool   `json:"enabled"`
	Disabled bool   `json:"disabled"`
}

// mcpRows reads the server rows off the page.
const mcpRows = `[...document.querySelectorAll("#mcp-table tbody tr[data-name]")].map((tr) => {
  const box = tr.querySelector("input[type=checkbox]");
  const badge = tr.querySelector(".badge");
  return { name: tr.dataset.name, health: badge.textContent, status: badge.className,
    enabled: box.checked, disabled: box.disabled };
})`

// listToolsHTTP posts one tools/list to /mcp with key and returns the
// tool names. A plain request, not an SDK session: the SDK client keeps a
// list for its ttlMs, and the test must see the gateway's answer now.
func listToolsHTTP(t *testing.T, base, key string) []string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	must(t, err)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /mcp tools/list: %s %s", resp.Status, raw)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for line := range strings.SplitSeq(string(raw), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				raw = []byte(data)
			}
		}
	}
	var out struct {
		Result struct{ Tools []struct{ Name string } }
		Error  *struct{ Message string }
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Error != nil {
		t.Fatalf("tools/list answered %s (%v)", raw, err)
	}
	names := make([]string, len(out.Result.Tools))
	for i, tl := range out.Result.Tools {
		names[i] = tl.Name
	}
	return names
}

// TestWebMCPServers drives the MCP servers page in headless Chromium
// against the real /api/mcp-servers: add a bearer-token server through the
// form (listed with its health and tool count, its tools in the account's
// /mcp tools/list, the token never shown again), refuse a duplicate and an
// invalid name with the server's message, switch it off and on, delete it;
// with registry-svc gone the page says the list failed, not that the
// endpoints are missing.
func TestWebMCPServers(t *testing.T) {
	natsURL := servicetest.NATS(t)
	db := servicetest.Postgres(t, nil)
	log := servicetest.Logger(t)
	cfg := testConfig(t, natsURL, db.DSN)
	cfg.MCPToolDirs = []string{"builtin"}
	cfg.MCPClientAllowPriv = true // the test MCP server listens on loopback
	cfg.SecretKey = "web-mcp-test-secret-key"
	gw := gateway.New(gateway.Options{Config: cfg, Log: log})
	startGroup(t, vfssvc.New(vfssvc.Options{Config: cfg, Log: log}))
	// registry-svc runs in a group of its own, stopped at the end to
	// see how the page reports a failing list.
	registry := svc.NewGroup(svc.Options{Services: []svc.Service{registrysvc.New(registrysvc.Options{Config: cfg, Log: log, ExternalRefresh: 100 * time.Millisecond})},
		Log: log, Grace: 10 * time.Second})
	must(t, registry.Start(context.Background()))
	t.Cleanup(func() { _ = registry.Stop(context.Background()) })
	startGroup(t, gw)
	base := "http://" + gw.Addr()
	accts := accounts.NewAccounts(servicetest.Client(t, natsURL))
	acct, err := accts.Create(t.Context(), &accounts.AccountCreateRequest{Email: "web-mcp@example.com"})
	must(t, err)
	k, err := accts.CreateKey(t.Context(), &accounts.KeyCreateRequest{AccountID: acct.ID, Name: "web"})
	must(t, err)
	key := k.Key

	const token = "web-ext-secret-token"
	ext := servicetest.NewMCPServer(t, servicetest.MCPServerOptions{Token: token})
	textTool(ext, "forecast", "sunny in ")
	textTool(ext, "alerts", "no alerts for ")
	listed := func() []string { return listToolsHTTP(t, base, key) }

	b := startBrowser(t)
	b.do("signing in",
		chromedp.Navigate(base+"/app/#/mcp"),
		chromedp.WaitVisible(chromedp.ID("login-key")),
		chromedp.SendKeys(chromedp.ID("login-key"), key),
		chromedp.Click(chromedp.ID("login-submit")),
		chromedp.WaitVisible(chromedp.ID("mcp-form")),
	)
	b.waitFor("the empty list shows", `document.querySelector("#mcp-table tbody td.muted")?.textContent === "No servers yet."`)

	// fill types into the add form; auth picks the authentication mode.
	fill := func(what, name, url, auth, secret string) {
		t.Helper()
		steps := []chromedp.Action[chromedp.Void]{
			chromedp.Evaluate[chromedp.Void](`document.getElementById("mcp-form").reset()`),
			chromedp.SendKeys(chromedp.ID("mcp-name"), name),
			chromedp.SendKeys(chromedp.ID("mcp-url"), url),
			chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById("mcp-auth"); s.value = ` + strconv.Quote(auth) +
				`; s.dispatchEvent(new Event("change")); })()`),
		}
		if secret != "" {
			steps = append(steps, chromedp.WaitVisible(chromedp.ID("mcp-token")), chromedp.SendKeys(chromedp.ID("mcp-token"), secret))
		}
		b.do(what, append(steps, chromedp.Click(chromedp.ID("mcp-add")))...)
	}

	// Add the server with its bearer token: listed, healthy, two tools.
	fill("adding a server", "weather", ext.URL+"/mcp", "bearer", token)
	b.waitFor("the server is listed healthy", `document.querySelector('#mcp-table tr[data-name="weather"] .badge.health-ok') !== null`)
	rows := eval[[]mcpRow](b, mcpRows)
	if len(rows) != 1 || rows[0].Name != "weather" || rows[0].Health != "ok · 2 tools" || !rows[0].Enabled {
		t.Fatalf("rows after adding: %+v", rows)
	}
	if got := eval[string](b, `document.querySelector('#mcp-table tr[data-name="weather"]').textContent`); !strings.Contains(got, "bearer") || !strings.Contains(got, ext.URL+"/mcp") {
		t.Errorf("the row shows %q, want its URL and auth bearer", got)
	}
	if names := listed(); !slices.Contains(names, "weather__forecast") || !slices.Contains(names, "weather__alerts") {
		t.Fatalf("tools/list after adding through the page: %v", names)
	}
	if slices.ContainsFunc(ext.Authorizations(), func(a string) bool { return a != "Bearer "+token }) {
		t.Errorf("the server got Authorization %v, want only its token", ext.Authorizations())
	}
	// The token is gone from the page: not in the markup, not in a field.
	tokenShown := `document.documentElement.outerHTML.includes(` + strconv.Quote(token) + `) ||
	  [...document.querySelectorAll("input, textarea")].some((e) => e.value.includes(` + strconv.Quote(token) + `))`
	if eval[bool](b, tokenShown) {
		t.Fatal("the access token is still on the page after adding")
	}
	if eval[bool](b, `!document.getElementById("mcp-token-field").hidden`) {
		t.Error("the token field stays open after adding")
	}
	b.screenshot("mcp.png")

	// A duplicate name and an invalid name show the server's message.
	fill("adding a duplicate", "weather", ext.URL, "none", "")
	b.waitFor("the duplicate is refused", `document.getElementById("mcp-error").textContent !== ""`)
	dup := eval[string](b, `document.getElementById("mcp-error").textContent`)
	_, body := apiJSON(t, http.MethodPost, base+"/api/mcp-servers", key, map[string]any{"name": "weather", "url": ext.URL})
	var refusal struct{ Error, Message string }
	must(t, json.Unmarshal(body, &refusal))
	if refusal.Message == "" || !strings.Contains(dup, refusal.Message) {
		t.Errorf("a duplicate shows %q, want the server's message %q", dup, refusal.Message)
	}
	fill("adding an invalid name", "Bad Name", ext.URL, "none", "")
	b.waitFor("the invalid name is refused", `document.getElementById("mcp-error").textContent.includes("must match")`)
	b.screenshot("mcp-error.png")
	if rows := eval[[]mcpRow](b, mcpRows); len(rows) != 1 {
		t.Errorf("rows after two refusals: %+v", rows)
	}

	// Switch it off: the page, the API and tools/list agree; then on again.
	toggle := chromedp.CSS(`#mcp-table tr[data-name="weather"] input[type=checkbox]`)
	b.do("switching the server off", chromedp.Click(toggle))
	b.waitFor("the server shows off", `(() => { const r = `+mcpRows+`[0]; return r && !r.enabled && !r.disabled; })()`)
	if rows := eval[[]mcpRow](b, mcpRows); rows[0].Health != "off" {
		t.Errorf("a switched-off server shows health %q, want off", rows[0].Health)
	}
	if _, body := apiJSON(t, http.MethodGet, base+"/api/mcp-servers", key, nil); !strings.Contains(string(body), `"enabled":false`) {
		t.Errorf("GET after switching off: %s", body)
	}
	if names := listed(); slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "weather__") }) {
		t.Errorf("tools/list of a switched-off server: %v", names)
	}
	b.do("switching the server on", chromedp.Click(toggle))
	b.waitFor("the server is back healthy", `(() => { const r = `+mcpRows+`[0]; return r && r.enabled && !r.disabled && r.health === "ok · 2 tools"; })()`)
	servicetest.Eventually(t, 10*time.Second, func() bool { return slices.Contains(listed(), "weather__forecast") }, "weather__forecast listed again")
	if eval[bool](b, tokenShown) {
		t.Fatal("the access token is on the page")
	}

	// A server that goes down shows down, with the reason on the page.
	ext.SetDown(true)
	servicetest.Eventually(t, 10*time.Second, func() bool {
		_, body := apiJSON(t, http.MethodGet, base+"/api/mcp-servers", key, nil)
		return strings.Contains(string(body), `"status":"down"`)
	}, "the server reported down")
	b.do("reopening the page", chromedp.Click(chromedp.CSS(`#nav a[data-view="chat"]`)), chromedp.Click(chromedp.CSS(`#nav a[data-view="mcp"]`)))
	b.waitFor("the server shows down with its reason",
		`document.querySelector('#mcp-table tr[data-name="weather"] .badge.health-down') !== null && document.querySelector('#mcp-table tr[data-name="weather"] .health-error')?.textContent !== ""`)
	b.screenshot("mcp-down.png")
	ext.SetDown(false)

	// Delete: a second click confirms; the list is empty again.
	del := chromedp.CSS(`#mcp-table tr[data-name="weather"] button`)
	b.do("deleting the server", chromedp.Click(del), chromedp.Click(del),
		chromedp.WaitNotPresent(chromedp.CSS(`#mcp-table tr[data-name="weather"]`)))
	b.waitFor("the empty list shows again", `document.querySelector("#mcp-table tbody td.muted")?.textContent === "No servers yet."`)
	if _, body := apiJSON(t, http.MethodGet, base+"/api/mcp-servers", key, nil); string(body) != `{"servers":[]}`+"\n" {
		t.Errorf("GET after deleting: %s", body)
	}
	servicetest.Eventually(t, 10*time.Second, func() bool {
		return !slices.ContainsFunc(listed(), func(n string) bool { return strings.HasPrefix(n, "weather__") })
	}, "the deleted server's tools unlisted")

	// registry-svc gone: the list fails with the gateway's message; the
	// endpoints are there, so the page must not call them missing.
	must(t, registry.Stop(context.Background()))
	code, _ := apiJSON(t, http.MethodGet, base+"/api/mcp-servers", key, nil)
	if code == http.StatusNotFound || code < 500 {
		t.Fatalf("GET with registry-svc stopped: %d, want a 5xx", code)
	}
	b.do("reopening the page", chromedp.Click(chromedp.CSS(`#nav a[data-view="chat"]`)), chromedp.Click(chromedp.CSS(`#nav a[data-view="mcp"]`)))
	b.waitFor("the failure is shown", `document.getElementById("mcp-error").textContent !== ""`)
	if got := eval[string](b, `document.getElementById("mcp-error").textContent`); !strings.HasPrefix(got, "Could not list MCP servers:") {
		t.Errorf("with registry-svc stopped the page says %q", got)
	}
	b.noPageErrors()
}
