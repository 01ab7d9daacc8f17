package stack

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/gateway"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/svc"
)

// startDevOnce starts the dev stack once, checks it serves the demo key it
// printed, stops it, and returns the key.
func startDevOnce(t *testing.T, devDir string) string {
	t.Helper()
	cfg := testConfig(t, "nats://"+servicetest.FreeAddr(t), "")
	cfg.DevDir = devDir
	var out bytes.Buffer
	services, err := Dev(DevOptions{Config: cfg, Log: servicetest.Logger(t), Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	admin := svc.NewAdmin(svc.AdminOptions{Addr: "127.0.0.1:0"})
	g := svc.NewGroup(svc.Options{Services: services, Admin: admin, Log: servicetest.Logger(t), Grace: 20 * time.Second})
	t0 := time.Now()
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("dev stack ready in %s", time.Since(t0).Round(time.Millisecond))
	if code, rep := readyz(t, admin); code != http.StatusOK {
		t.Errorf("readyz = %d %+v", code, rep)
	}
	m := regexp.MustCompile(`Demo API key   (mb_\S+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("banner has no demo key:\n%s", out.String())
	}
	for _, want := range []string{"/mcp", "mcpServers", "Bearer " + m[1]} {
		if !bytes.Contains(out.Bytes(), []byte(want)) {
			t.Errorf("banner lacks %q", want)
		}
	}
	var gw *gateway.Service
	for _, s := range services {
		if g, ok := s.(*gateway.Service); ok {
			gw = g
		}
	}
	if code, body := httpGet(t, "http://"+gw.Addr()+"/api/me", m[1]); code != http.StatusOK {
		t.Errorf("GET /api/me with the demo key = %d %s", code, body)
	}
	if err := g.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	return m[1]
}

// A second dev run finds the first run's data, and no postgres outlives a run.
func TestDevKeepsDataBetweenRuns(t *testing.T) {
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil { // the postgres user must reach it when we are root
		t.Fatal(err)
	}
	devDir := filepath.Join(base, ".mirobody")
	first := startDevOnce(t, devDir)
	if _, err := os.Stat(filepath.Join(devDir, "pg", "postmaster.pid")); !os.IsNotExist(err) {
		t.Errorf("postmaster.pid still there after stop (err %v): postgres outlived the run", err)
	}
	second := startDevOnce(t, devDir)
	if first != second {
		t.Errorf("second run printed another demo key: the data was not found again")
	}
}
