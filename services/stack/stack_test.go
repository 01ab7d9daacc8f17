package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	agentsvc "github.com/mirobody/mirobody-go/agent-svc"
	"github.com/mirobody/mirobody-go/gateway"
	registrysvc "github.com/mirobody/mirobody-go/registry-svc"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/svc"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

// TestMain lets this binary serve as the Python tool sandbox's launcher
// (the dev stack starts sandboxed tools) and as the chaos run's processes
// (chaosHelper), then runs the tests.
func TestMain(m *testing.M) {
	registrysvc.RunToolSandbox()
	chaosHelper()
	servicetest.Main(m)
}

// testConfig returns the defaults pointed at the test's NATS and database,
// with every listener on a free port.
func testConfig(t *testing.T, natsURL, dsn string) *conf.Config {
	t.Helper()
	res, err := conf.Load(conf.LoadOptions{Path: "testdata/empty.yaml", LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Config
	c.NATSURL, c.DatabaseURL = natsURL, dsn
	c.HTTPAddr, c.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	c.ToolsWatch = false
	// The title call would be one more request for every scripted
	// provider's script; the tests of titles turn it on.
	c.SessionTitles = false
	return c
}

// startGroup starts services as one binary would, with its own admin
// listener, and stops them at cleanup.
func startGroup(t *testing.T, services ...svc.Service) *svc.Admin {
	t.Helper()
	admin := svc.NewAdmin(svc.AdminOptions{Addr: "127.0.0.1:0", HealthInterval: 100 * time.Millisecond})
	g := svc.NewGroup(svc.Options{Services: services, Admin: admin, Log: servicetest.Logger(t), Grace: 10 * time.Second})
	if err := g.Start(context.Background()); err != nil {
		t.Fatalf("starting %v: %v", services, err)
	}
	t.Cleanup(func() { _ = g.Stop(context.Background()) })
	return admin
}

func httpGet(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

func readyz(t *testing.T, admin *svc.Admin) (int, svc.ReadyReport) {
	t.Helper()
	code, body := httpGet(t, "http://"+admin.Addr()+"/readyz", "")
	var rep svc.ReadyReport
	if err := json.Unmarshal(body, &rep); err != nil {
		t.Fatalf("readyz body %q: %v", body, err)
	}
	return code, rep
}

func healthz(t *testing.T, admin *svc.Admin) svc.HealthReport {
	t.Helper()
	code, body := httpGet(t, "http://"+admin.Addr()+"/healthz", "")
	var rep svc.HealthReport
	if err := json.Unmarshal(body, &rep); err != nil || code != http.StatusOK {
		t.Fatalf("healthz = %d %q: %v", code, body, err)
	}
	return rep
}

// TestVFSOutageAndRecovery runs the stack in both topologies, stops
// vfs-svc, checks that the gateway stays ready (it answers 503 fast), shows
// vfs down on /healthz within 2 s, and that a new vfs-svc restores service
// with nothing else restarted.
func TestVFSOutageAndRecovery(t *testing.T) {
	for _, split := range []bool{false, true} {
		name := map[bool]string{false: "all-in-one", true: "split"}[split]
		t.Run(name, func(t *testing.T) {
			natsURL := servicetest.NATS(t)
			db := servicetest.Postgres(t, nil)
			log := servicetest.Logger(t)
			cfg := testConfig(t, natsURL, db.DSN)
			cfgOf := func() *conf.Config {
				if !split {
					return cfg // one binary, one config
				}
				c := *cfg
				return &c
			}
			v := vfssvc.New(vfssvc.Options{Config: cfgOf(), Log: log})
			r := registrysvc.New(registrysvc.Options{Config: cfgOf(), Log: log})
			a := agentsvc.New(agentsvc.Options{Config: cfgOf(), Log: log})
			gw := gateway.New(gateway.Options{Config: cfgOf(), Log: log})
			var gwAdmin *svc.Admin
			if split {
				startGroup(t, v)
				startGroup(t, r)
				startGroup(t, a)
				gwAdmin = startGroup(t, gw)
			} else {
				gwAdmin = startGroup(t, v, r, a, gw)
			}
			if code, rep := readyz(t, gwAdmin); code != http.StatusOK {
				t.Fatalf("readyz = %d %+v", code, rep)
			}

			ctx := context.Background()
			accts := accounts.NewAccounts(servicetest.Client(t, natsURL))
			acct, err := accts.Create(ctx, &accounts.AccountCreateRequest{Email: "outage-" + name + "@example.com"})
			if err != nil {
				t.Fatal(err)
			}
			key, err := accts.CreateKey(ctx, &accounts.KeyCreateRequest{AccountID: acct.ID, Name: "test"})
			if err != nil {
				t.Fatal(err)
			}
			me := "http://" + gw.Addr() + "/api/me"
			if code, body := httpGet(t, me, key.Key); code != http.StatusOK {
				t.Fatalf("GET /api/me = %d %s", code, body)
			}

			if err := v.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			stopped := time.Now()
			servicetest.Eventually(t, 2*time.Second, func() bool {
				d := healthz(t, gwAdmin).Details["gateway.vfs"]
				return d != "ok" && d != ""
			}, "gateway /healthz names vfs as down")
			t.Logf("gateway noticed vfs-svc down after %s", time.Since(stopped).Round(time.Millisecond))
			details := healthz(t, gwAdmin).Details
			for _, up := range []string{"gateway.registry", "gateway.agent", "gateway.nats"} {
				if details[up] != "ok" {
					t.Errorf("%s = %q while only vfs is down", up, details[up])
				}
			}
			if code, rep := readyz(t, gwAdmin); split && code != http.StatusOK || rep.Checks["gateway.nats"] != "ok" || rep.Checks["gateway.vfs"] != "" {
				t.Errorf("gateway /readyz while vfs is down = %d %+v, want ready on NATS alone", code, rep)
			}
			t0 := time.Now()
			code, body := httpGet(t, me, key.Key)
			if code != http.StatusServiceUnavailable {
				t.Errorf("GET /api/me with vfs down = %d %s, want 503", code, body)
			}
			if d := time.Since(t0); d > time.Second {
				t.Errorf("failing call took %s, want prompt", d)
			}

			v2 := vfssvc.New(vfssvc.Options{Config: cfgOf(), Log: log})
			if split {
				startGroup(t, v2)
			} else {
				if err := v2.Start(ctx); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = v2.Stop(context.Background()) })
			}
			servicetest.Eventually(t, 5*time.Second, func() bool {
				// All-in-one: the stopped vfs-svc component still reports
				// down; the gateway's own view must recover.
				for name, res := range healthz(t, gwAdmin).Details {
					if strings.HasPrefix(name, "gateway.") && res != "ok" {
						return false
					}
				}
				return true
			}, "gateway sees vfs again after vfs-svc restart")
			if code, body := httpGet(t, me, key.Key); code != http.StatusOK {
				t.Fatalf("GET /api/me after recovery = %d %s", code, body)
			}
		})
	}
}

func TestParseTargets(t *testing.T) {
	tests := []struct {
		in   string
		want string
		err  bool
	}{
		{"all", "[vfs-svc registry-svc agent-svc gateway]", false},
		{"", "[vfs-svc registry-svc agent-svc gateway]", false},
		{"gateway,vfs-svc", "[vfs-svc gateway]", false},
		{"gateway,bogus", "", true},
	}
	for _, tt := range tests {
		got, err := ParseTargets(tt.in)
		if (err != nil) != tt.err || (err == nil && fmt.Sprint(got) != tt.want) {
			t.Errorf("ParseTargets(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

// newAccountKey creates an account for email through vfs-svc on natsURL and
// returns a new API key of it.
func newAccountKey(ctx context.Context, t *testing.T, natsURL, email string) string {
	t.Helper()
	accts := accounts.NewAccounts(servicetest.Client(t, natsURL))
	a, err := accts.Create(ctx, &accounts.AccountCreateRequest{Email: email})
	must(t, err)
	k, err := accts.CreateKey(ctx, &accounts.KeyCreateRequest{AccountID: a.ID, Name: "t"})
	must(t, err)
	return k.Key
}
