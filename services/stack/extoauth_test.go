package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/vfs/mcpservers"
	"github.com/mirobody/mirobody-go/services/wire"
)

// TestExternalServerOAuth: the external server is a second Mirobody
// stack's /mcp, whose gateway is a real OAuth authorization server. An
// account adds it with auth oauth, the user opens authorize_url, logs in
// and consents there, and the browser comes back to our callback; the
// server's tools are then listed and callable. A token the server refuses
// is refreshed (the refresh token rotates); a failed refresh shows
// "authorization needed". A bad or replayed state is refused, and no
// token appears in a GET answer or in the logs. The flow is bound to the
// browser that added the server, and its state is opaque (issue 15,
// finding 4): a victim's browser that opens the attacker's authorize URL
// connects nothing.
func TestExternalServerOAuth(t *testing.T) {
	// Both sides are dev stacks, each with its own NATS (under the real
	// permission table) and database.
	remote := startOAuthDev(t)
	log, logs := servicetest.CaptureLogger(t)
	local := startOAuthDevLog(t, log)
	base := local.Base
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// As the CLI, the one identity besides registry-svc that may read the
	// server store.
	nc, err := cliConn(local.Config, "extoauth-test", servicetest.Logger(t))
	must(t, err)
	t.Cleanup(nc.Close)
	store := mcpservers.NewMCPServers(wire.NewClient(wire.ClientOptions{Conn: nc}))
	a := struct{ ID string }{local.AccountID}
	k, err := local.Accounts.CreateKey(ctx, &accounts.KeyCreateRequest{AccountID: a.ID, Name: "t"})
	must(t, err)
	key := k.Key

	// Add, from the user's browser: the answer has the authorize URL and
	// binds the flow to this browser; until then the server needs
	// authorization.
	ua := newUserAgent(t)
	reqBody, _ := json.Marshal(map[string]any{"name": "body", "url": remote.Base + "/mcp", "auth": "oauth"})
	addReq, err := http.NewRequest(http.MethodPost, base+"/api/mcp-servers", bytes.NewReader(reqBody))
	must(t, err)
	addReq.Header.Set("Authorization", "Bearer "+key)
	addReq.Header.Set("Content-Type", "application/json")
	resp, page := ua.do(addReq)
	body := []byte(page)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST: %d %s", resp.StatusCode, body)
	}
	var added registry.Server
	must(t, json.Unmarshal(body, &added))
	if added.Auth != registry.AuthOAuth || added.Health.Status != registry.HealthDown || added.Health.Error != "authorization needed" ||
		!strings.HasPrefix(added.AuthorizeURL, remote.Base+"/oauth/authorize?") {
		t.Fatalf("POST answered %s", body)
	}
	var flowCookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if strings.HasPrefix(ck.Name, "mirobody_mcp_oauth_") {
			flowCookie = ck
		}
	}
	if flowCookie == nil || !flowCookie.HttpOnly || flowCookie.Path != registry.OAuthCallbackPath || flowCookie.SameSite != http.SameSiteLaxMode {
		t.Fatalf("POST set the flow cookie %+v, want HttpOnly, SameSite=Lax, path %s", flowCookie, registry.OAuthCallbackPath)
	}
	// The state is opaque: the account id does not reach the server.
	authz, err := url.Parse(added.AuthorizeURL)
	must(t, err)
	if st := authz.Query().Get("state"); len(st) < 20 || strings.Contains(added.AuthorizeURL, a.ID) || strings.Contains(st, "body") {
		t.Errorf("the state %q (or the authorize URL) carries the flow's account or server", st)
	}
	for _, p := range []string{"code_challenge_method=S256", "code_challenge=", "resource=", "redirect_uri=", "state="} {
		if !strings.Contains(added.AuthorizeURL, p) {
			t.Errorf("authorize_url lacks %s: %s", p, added.AuthorizeURL)
		}
	}

	// A victim's browser that opens this (the attacker's) authorize URL
	// and signs in at the server is refused at our callback: the victim's
	// identity there is not connected to the attacker's account.
	victim := newUserAgent(t)
	vback := victim.signIn(remote, added.AuthorizeURL)
	if resp, page := victim.get(vback.String()); resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "started in another browser") {
		t.Fatalf("the victim's callback: %d %s", resp.StatusCode, page)
	}
	if code, body := apiJSON(t, http.MethodGet, base+"/api/mcp-servers", key, nil); code != http.StatusOK ||
		!strings.Contains(string(body), `"error":"authorization needed"`) {
		t.Fatalf("the server after the victim's callback: %d %s", code, body)
	}

	// The user logs in and consents on the remote server's pages, and is
	// sent back to our callback.
	back := ua.signIn(remote, added.AuthorizeURL)
	if !strings.HasPrefix(back.String(), base+registry.OAuthCallbackPath+"?") || back.Query().Get("code") == "" {
		t.Fatalf("the authorization server sent the browser to %s", back)
	}
	resp, page = ua.get(back.String())
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "Connected") {
		t.Fatalf("callback: %d %s", resp.StatusCode, page)
	}
	// Replayed, or with a state of our own: refused.
	if resp, page := ua.get(back.String()); resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "already used") {
		t.Errorf("replayed callback: %d %s", resp.StatusCode, page)
	}
	forged := back.Query()
	forged.Set("state", a.ID+".body.forged")
	if resp, _ := ua.get(base + registry.OAuthCallbackPath + "?" + forged.Encode()); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("forged state: %d", resp.StatusCode)
	}
	if resp, _ := ua.get(base + registry.OAuthCallbackPath + "?code=x&state=nonsense"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("nonsense state: %d", resp.StatusCode)
	}

	stored := func() *mcpservers.MCPServerOAuth {
		t.Helper()
		r, err := store.List(ctx, &mcpservers.MCPServerListRequest{AccountID: a.ID, WithSecrets: true})
		must(t, err)
		if len(r.Servers) != 1 || r.Servers[0].Secrets == nil || r.Servers[0].Secrets.OAuth == nil {
			t.Fatalf("stored servers: %+v", r.Servers)
		}
		return r.Servers[0].Secrets.OAuth
	}
	first := stored()
	if first.AccessToken == "" || first.RefreshToken == "" || first.Verifier != "" || first.State != "" {
		t.Fatalf("stored OAuth state after the callback: access %t refresh %t pending %t", first.AccessToken != "", first.RefreshToken != "", first.State != "")
	}

	// Health ok, no secret in the answer.
	code, body := apiJSON(t, http.MethodGet, base+"/api/mcp-servers", key, nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"auth":"oauth"`) || !strings.Contains(string(body), `"status":"ok"`) {
		t.Fatalf("GET: %d %s", code, body)
	}
	secrets := []string{first.AccessToken, first.RefreshToken, first.ClientID, back.Query().Get("code"), back.Query().Get("state")}
	for _, s := range secrets {
		if strings.Contains(string(body), s) {
			t.Errorf("GET /api/mcp-servers shows a secret")
		}
	}

	session, err := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer{key}}}, nil)
	must(t, err)
	defer session.Close()
	if names := toolNames(t, session); !slices.Contains(names, "body__my_account") {
		t.Fatalf("tools: %v", names)
	}
	callRemote := func() (string, bool) {
		t.Helper()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "body__my_account", Arguments: map[string]any{}})
		must(t, err)
		tx, _ := res.Content[0].(*mcp.TextContent)
		return tx.Text, res.IsError
	}
	// The call runs on the remote stack as the remote account.
	if text, isErr := callRemote(); isErr || text != "account "+remote.AccountID {
		t.Fatalf("body__my_account: %q (error %v)", text, isErr)
	}

	// The remote server refuses the access token (as if expired or
	// revoked): registry-svc refreshes once, the call goes through, and
	// the rotated refresh token is stored.
	spoil := func(access, refresh string) {
		t.Helper()
		o := stored()
		o.AccessToken, o.Expiry = access, time.Now().Add(time.Hour)
		if refresh != "" {
			o.RefreshToken = refresh
		}
		_, err := store.SetSecrets(ctx, &mcpservers.MCPServerSetSecretsRequest{AccountID: a.ID, Name: "body", Secrets: &mcpservers.MCPServerSecrets{OAuth: o}})
		must(t, err)
		// A change over the API makes the registry read the configuration again.
		if code, body := apiJSON(t, http.MethodPatch, base+"/api/mcp-servers/body", key, map[string]any{"enabled": true}); code != http.StatusOK {
			t.Fatalf("PATCH: %d %s", code, body)
		}
	}
	spoil("not-a-valid-token", "")
	servicetest.Eventually(t, 10*time.Second, func() bool {
		text, isErr := callRemote()
		return !isErr && text == "account "+remote.AccountID && stored().RefreshToken != first.RefreshToken
	}, "the call after a refused token was not refreshed")
	second := stored()
	if second.AccessToken == "not-a-valid-token" || second.AccessToken == first.AccessToken {
		t.Errorf("the access token was not replaced")
	}
	secrets = append(secrets, second.AccessToken, second.RefreshToken)

	// A refresh that fails: the server needs authorization again.
	spoil("not-a-valid-token-either", "not-a-refresh-token")
	servicetest.Eventually(t, 10*time.Second, func() bool {
		// Its tools are gone (unknown tool) or the call fails.
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "body__my_account", Arguments: map[string]any{}})
		return err != nil || res.IsError
	}, "a call without a valid token succeeded")
	code, body = apiJSON(t, http.MethodGet, base+"/api/mcp-servers", key, nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"error":"authorization needed"`) {
		t.Errorf("GET after a failed refresh: %d %s", code, body)
	}

	// The CLI: mcp add --oauth prints the URL; the same flow connects it.
	t.Setenv("NATS_URL", local.Config.NATSURL)
	t.Setenv("DEV_DIR", local.Config.DevDir)
	t.Setenv("MCP_PUBLIC_URL", base)
	var out, errOut bytes.Buffer
	if code := Main(ctx, []string{"mcp", "add", "--name", "cli", "--url", remote.Base + "/mcp", "--oauth", "--account", local.Email,
		"--config", "testdata/empty.yaml"}, &out, &errOut); code != 0 {
		t.Fatalf("mirobody mcp add --oauth = %d: %s %s", code, out.String(), errOut.String())
	}
	// It prints a start link on our gateway: the browser that opens it
	// is bound to the flow and sent on to the server; the link works once.
	link := ""
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, base+registry.OAuthStartPath+"?") {
			link = line
		}
	}
	if link == "" || !strings.Contains(out.String(), "authorization needed") {
		t.Fatalf("mirobody mcp add --oauth printed:\n%s", out.String())
	}
	operator := newUserAgent(t)
	resp, page = operator.get(link)
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(resp.Header.Get("Location"), remote.Base+"/oauth/authorize?") {
		t.Fatalf("start link: %d %q %s", resp.StatusCode, resp.Header.Get("Location"), page)
	}
	cliAuthURL := resp.Header.Get("Location")
	if resp, page := newUserAgent(t).get(link); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("start link opened twice: %d %s", resp.StatusCode, page)
	}
	back = operator.signIn(remote, cliAuthURL)
	if resp, page := ua.get(back.String()); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("callback of the CLI's flow in another browser: %d %s", resp.StatusCode, page)
	}
	if resp, page := operator.get(back.String()); resp.StatusCode != http.StatusOK {
		t.Fatalf("callback of the CLI's flow: %d %s", resp.StatusCode, page)
	}
	code, body = apiJSON(t, http.MethodGet, base+"/api/mcp-servers", key, nil)
	if code != http.StatusOK || !strings.Contains(string(body), `{"name":"cli","url":"`+remote.Base+`/mcp","enabled":true,"auth":"oauth","health":{"status":"ok"`) {
		t.Errorf("GET after the CLI's flow: %d %s", code, body)
	}

	for _, s := range secrets {
		if strings.Contains(logs.String(), s) {
			t.Errorf("a secret is in the logs")
		}
	}
}
