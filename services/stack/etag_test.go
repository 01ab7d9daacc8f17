package stack

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/gateway"
	registrysvc "github.com/mirobody/mirobody-go/registry-svc"
	"github.com/mirobody/mirobody-go/services/servicetest"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

// listOverHTTP posts a tools/list to /mcp as a plain HTTP client would,
// with If-None-Match when etag is set, and returns status, ETag and body.
func listOverHTTP(t *testing.T, url, key, etag string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+key)
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("ETag"), string(body)
}

// TestToolsListETag: tools/list over /mcp carries an ETag; the same
// account sending it back gets 304 with no body; another account's tag is
// its own; a change of the account's tools (an external server added)
// changes the tag and the answer.
func TestToolsListETag(t *testing.T) {
	natsURL := servicetest.NATS(t)
	db := servicetest.Postgres(t, nil)
	log := servicetest.Logger(t)
	cfg := testConfig(t, natsURL, db.DSN)
	cfg.MCPToolDirs = []string{"testdata/session-tools", "builtin"}
	cfg.MCPClientAllowPriv = true
	gw := gateway.New(gateway.Options{Config: cfg, Log: log})
	startGroup(t, vfssvc.New(vfssvc.Options{Config: cfg, Log: log}), registrysvc.New(registrysvc.Options{Config: cfg, Log: log}), gw)
	base := "http://" + gw.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	newKey := func(email string) string { return newAccountKey(ctx, t, natsURL, email) }
	alice, bob := newKey("etag-alice@example.com"), newKey("etag-bob@example.com")

	code, etag, body := listOverHTTP(t, base+"/mcp", alice, "")
	if code != http.StatusOK || etag == "" || !strings.Contains(body, `"session_of"`) {
		t.Fatalf("first list: %d etag %q %s", code, etag, body)
	}
	if code, again, body := listOverHTTP(t, base+"/mcp", alice, etag); code != http.StatusNotModified || again != etag || body != "" {
		t.Errorf("revalidation: %d etag %q body %q, want 304 with the same tag and no body", code, again, body)
	}
	if code, other, _ := listOverHTTP(t, base+"/mcp", bob, etag); code != http.StatusOK || other == etag || other == "" {
		t.Errorf("another account with alice's tag: %d etag %q, want 200 with a tag of its own", code, other)
	}

	weather := servicetest.NewMCPServer(t, servicetest.MCPServerOptions{})
	textTool(weather, "forecast", "sunny in ")
	if code, body := apiJSON(t, http.MethodPost, base+"/api/mcp-servers", alice, map[string]any{"name": "weather", "url": weather.URL}); code != http.StatusCreated {
		t.Fatalf("adding the external server: %d %s", code, body)
	}
	servicetest.Eventually(t, 10*time.Second, func() bool {
		code, next, body := listOverHTTP(t, base+"/mcp", alice, etag)
		return code == http.StatusOK && next != etag && strings.Contains(body, `"weather__forecast"`)
	}, "a new tag and the external tool after adding a server")
}
