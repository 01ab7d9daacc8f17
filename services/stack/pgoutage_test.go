package stack

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/gateway"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

// TestPostgresOutageIsUnavailable: when vfs-svc loses its database, its
// requests fail as unavailable (not internal), /api answers 503 with
// Retry-After, vfs-svc's /readyz names the database, and the gateway stays
// ready (it serves whatever does not need the database).
func TestPostgresOutageIsUnavailable(t *testing.T) {
	natsURL := servicetest.NATS(t)
	db := servicetest.Postgres(t, nil)
	u, err := url.Parse(db.DSN)
	must(t, err)
	proxy := servicetest.NewProxy(t, u.Host)
	u.Host = proxy.Addr()
	log := servicetest.Logger(t)
	cfg := testConfig(t, natsURL, u.String())
	v := vfssvc.New(vfssvc.Options{Config: cfg, Log: log})
	gw := gateway.New(gateway.Options{Config: cfg, Log: log})
	vfsAdmin := startGroup(t, v)
	gwAdmin := startGroup(t, gw)

	ctx := context.Background()
	accts := accounts.NewAccounts(servicetest.Client(t, natsURL))
	acct, err := accts.Create(ctx, &accounts.AccountCreateRequest{Email: "pg-outage@example.com"})
	must(t, err)
	key, err := accts.CreateKey(ctx, &accounts.KeyCreateRequest{AccountID: acct.ID, Name: "test"})
	must(t, err)
	me := "http://" + gw.Addr() + "/api/me"
	if code, body := httpGet(t, me, key.Key); code != http.StatusOK {
		t.Fatalf("GET /api/me = %d %s", code, body)
	}

	proxy.Kill()
	_, err = accts.Get(ctx, &accounts.AccountGetRequest{ID: acct.ID})
	var werr *wire.Error
	if !errors.As(err, &werr) || werr.Code != wire.Unavailable {
		t.Errorf("vfs accounts.get with the database down: %v, want unavailable", err)
	}
	req, _ := http.NewRequest(http.MethodGet, me, nil)
	req.Header.Set("Authorization", "Bearer "+key.Key)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), `"unavailable"`) {
		t.Errorf("GET /api/me with the database down = %d (Retry-After %q) %s, want 503 unavailable with Retry-After",
			resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if code, rep := readyz(t, vfsAdmin); code != http.StatusServiceUnavailable || rep.Checks["vfs-svc.postgres"] == "ok" {
		t.Errorf("vfs-svc /readyz with the database down = %d %+v", code, rep)
	}
	if code, rep := readyz(t, gwAdmin); code != http.StatusOK {
		t.Errorf("gateway /readyz with the database down = %d %+v, want ready", code, rep)
	}
}
