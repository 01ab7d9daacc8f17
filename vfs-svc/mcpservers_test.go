package vfssvc

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/mcpservers"
	"github.com/mirobody/mirobody-go/services/wire"
)

// TestExternalServerSecrets: credentials are sealed at rest, come back only
// when asked, cannot be read under another SECRET_KEY nor moved to another
// row, and are refused without SECRET_KEY.
func TestExternalServerSecrets(t *testing.T) {
	e := start(t, func(c *conf.Config) { c.SecretKey = "key-one" })
	ctx := context.Background()
	acct := e.account(t)
	m := mcpservers.NewMCPServers(e.client)
	sec := &mcpservers.MCPServerSecrets{AccessToken: "tok-123", Headers: map[string]string{"X-Api-Key": "hdr-456"}}
	if _, err := m.Create(ctx, &mcpservers.MCPServerCreateRequest{Server: mcpservers.MCPServer{AccountID: acct, Name: "a", URL: "https://a.example/mcp", Auth: "headers", Enabled: true, Secrets: sec}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, &mcpservers.MCPServerCreateRequest{Server: mcpservers.MCPServer{AccountID: acct, Name: "a", URL: "https://b.example/mcp"}}); !wire.IsCode(err, wire.AlreadyExists) {
		t.Errorf("a duplicate name: %v, want already_exists", err)
	}
	var sealed []byte
	if err := e.pool.QueryRow(ctx, `SELECT secrets FROM mcp_servers WHERE account_id = $1 AND name = 'a'`, acct).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("tok-123")) || bytes.Contains(sealed, []byte("hdr-456")) {
		t.Fatalf("secrets stored in the clear")
	}
	plain, err := m.List(ctx, &mcpservers.MCPServerListRequest{AccountID: acct})
	if err != nil || len(plain.Servers) != 1 || plain.Servers[0].Secrets != nil || plain.Servers[0].Auth != "headers" {
		t.Fatalf("list without secrets: %+v %v", plain, err)
	}
	full, err := m.List(ctx, &mcpservers.MCPServerListRequest{AccountID: acct, WithSecrets: true})
	if err != nil || full.Servers[0].Secrets == nil || full.Servers[0].Secrets.AccessToken != "tok-123" || full.Servers[0].Secrets.Headers["X-Api-Key"] != "hdr-456" {
		t.Fatalf("list with secrets: %+v %v", full, err)
	}

	// Moved to another row, the sealed value does not open.
	if _, err := e.pool.Exec(ctx, `INSERT INTO mcp_servers (account_id, name, url, secrets) VALUES ($1, 'b', 'https://b.example', $2)`, acct, sealed); err != nil {
		t.Fatal(err)
	}
	list, err := m.List(ctx, &mcpservers.MCPServerListRequest{AccountID: acct, WithSecrets: true})
	if err != nil || len(list.Servers) != 2 || list.Servers[0].Unreadable || !list.Servers[1].Unreadable || list.Servers[1].Secrets != nil {
		t.Errorf("a copied secret: %+v %v, want b unreadable and a intact", list, err)
	}
	if _, err := m.Delete(ctx, &mcpservers.MCPServerDeleteRequest{AccountID: acct, Name: "b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Delete(ctx, &mcpservers.MCPServerDeleteRequest{AccountID: acct, Name: "b"}); !wire.IsCode(err, wire.NotFound) {
		t.Errorf("deleting twice: %v, want not_found", err)
	}

	// Without SECRET_KEY, credentials are refused rather than stored in the
	// clear. The service restarts with each key: changing the field under
	// a running service raced with its handlers (seen under -race).
	restart := func(key string) {
		t.Helper()
		if err := e.svc.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		cfg := *e.cfg
		cfg.SecretKey = key
		e.svc = New(Options{Config: &cfg, Log: servicetest.Logger(t)})
		if err := e.svc.Start(ctx); err != nil {
			t.Fatalf("restarting vfs-svc: %v", err)
		}
		t.Cleanup(func() { _ = e.svc.Stop(context.Background()) })
	}
	restart("")
	_, err = m.Create(ctx, &mcpservers.MCPServerCreateRequest{Server: mcpservers.MCPServer{AccountID: acct, Name: "c", URL: "https://c.example/mcp", Secrets: sec}})
	if !wire.IsCode(err, wire.FailedPrecondition) {
		t.Errorf("credentials without SECRET_KEY: %v, want failed_precondition", err)
	}
	// Under another SECRET_KEY they do not open.
	restart("key-two")
	list, err = m.List(ctx, &mcpservers.MCPServerListRequest{AccountID: acct, WithSecrets: true})
	if err != nil || len(list.Servers) != 1 || !list.Servers[0].Unreadable {
		t.Errorf("another SECRET_KEY: %+v %v, want unreadable", list, err)
	}
}

// TestExternalServerOAuthClaim: a pending OAuth flow is taken once, by its
// exact state, before it expires; taking it clears it but keeps the client
// registration; concurrent claims let exactly one through.
func TestExternalServerOAuthClaim(t *testing.T) {
	e := start(t, func(c *conf.Config) { c.SecretKey = "key-one" })
	ctx := context.Background()
	acct := e.account(t)
	m := mcpservers.NewMCPServers(e.client)
	pending := func(name string, until time.Time) {
		t.Helper()
		o := &mcpservers.MCPServerOAuth{ClientID: "client-1", TokenURL: "https://as.example/token", State: "state-" + name, Verifier: "verifier", PendingUntil: until}
		if _, err := m.Create(ctx, &mcpservers.MCPServerCreateRequest{Server: mcpservers.MCPServer{AccountID: acct, Name: name, URL: "https://a.example/mcp",
			Auth: "oauth", Enabled: true, Secrets: &mcpservers.MCPServerSecrets{OAuth: o}}}); err != nil {
			t.Fatal(err)
		}
	}
	pending("live", time.Now().Add(time.Minute))
	pending("old", time.Now().Add(-time.Second))
	claim := func(name, state string) (*mcpservers.MCPServer, error) {
		return m.ClaimOAuth(ctx, &mcpservers.MCPServerClaimOAuthRequest{AccountID: acct, Name: name, State: state})
	}
	for _, tc := range []struct{ name, server, state string }{
		{"wrong state", "live", "state-old"},
		{"empty state", "live", ""},
		{"expired", "old", "state-old"},
		{"unknown server", "nope", "state-live"},
	} {
		if _, err := claim(tc.server, tc.state); !wire.IsCode(err, wire.FailedPrecondition) {
			t.Errorf("%s: %v, want failed_precondition", tc.name, err)
		}
	}
	results := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			got, err := claim("live", "state-live")
			if err == nil && (got.Secrets == nil || got.Secrets.OAuth.Verifier != "verifier") {
				t.Errorf("claimed flow: %+v", got.Secrets)
			}
			results <- err
		})
	}
	wg.Wait()
	close(results)
	ok := 0
	for err := range results {
		if err == nil {
			ok++
		} else if !wire.IsCode(err, wire.FailedPrecondition) {
			t.Errorf("a racing claim: %v", err)
		}
	}
	if ok != 1 {
		t.Errorf("%d claims went through, want 1", ok)
	}
	list, err := m.List(ctx, &mcpservers.MCPServerListRequest{AccountID: acct, WithSecrets: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Servers {
		if s.Name == "live" && (s.Secrets.OAuth.State != "" || s.Secrets.OAuth.Verifier != "" || s.Secrets.OAuth.ClientID != "client-1") {
			t.Errorf("after the claim: %+v", s.Secrets.OAuth)
		}
	}
}
