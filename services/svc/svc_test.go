package svc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/servicetest"
)

type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(e string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

type fake struct {
	name     string
	rec      *recorder
	startErr error
	mu       sync.Mutex
	probeErr error // the readiness check's answer
	// detailErr, when detail is set, is the answer of a Detail check.
	detail    bool
	detailErr error
}

func (f *fake) set(probe, detail error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probeErr, f.detailErr = probe, detail
}

func (f *fake) Name() string { return f.name }
func (f *fake) Start(context.Context) error {
	f.rec.add("start " + f.name)
	return f.startErr
}
func (f *fake) Stop(context.Context) error { f.rec.add("stop " + f.name); return nil }
func (f *fake) Checks() []Check {
	checks := []Check{{Name: "dep", Probe: func(context.Context) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.probeErr
	}}}
	if f.detail {
		checks = append(checks, Check{Name: "backend", Detail: true, Probe: func(context.Context) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.detailErr
		}})
	}
	return checks
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestGroupOrder(t *testing.T) {
	rec := &recorder{}
	g := NewGroup(Options{Log: quiet(), Services: []Service{&fake{name: "a", rec: rec}, &fake{name: "b", rec: rec}, &fake{name: "c", rec: rec}}})
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := g.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}
	if !reflect.DeepEqual(rec.events, want) {
		t.Errorf("events = %v, want %v", rec.events, want)
	}
}

func TestGroupStartFailureStopsStarted(t *testing.T) {
	rec := &recorder{}
	g := NewGroup(Options{Log: quiet(), Services: []Service{&fake{name: "a", rec: rec}, &fake{name: "b", rec: rec, startErr: errors.New("boom")}, &fake{name: "c", rec: rec}}})
	err := g.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "starting b: boom") {
		t.Fatalf("err = %v", err)
	}
	want := []string{"start a", "start b", "stop a"}
	if !reflect.DeepEqual(rec.events, want) {
		t.Errorf("events = %v, want %v", rec.events, want)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAdminEndpoints(t *testing.T) {
	rec := &recorder{}
	down := &fake{name: "db", rec: rec}
	admin := NewAdmin(AdminOptions{Addr: "127.0.0.1:0", Log: quiet()})
	g := NewGroup(Options{Log: quiet(), Admin: admin, Services: []Service{down}})
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Stop(context.Background()) })
	base := "http://" + admin.Addr()

	if code, _ := get(t, base+"/healthz"); code != 200 {
		t.Errorf("healthz = %d", code)
	}
	if code, body := get(t, base+"/readyz"); code != 200 || !strings.Contains(body, `"db.dep":"ok"`) {
		t.Errorf("readyz = %d %s", code, body)
	}
	down.set(errors.New("connection refused"), nil)
	code, body := get(t, base+"/readyz")
	var rep ReadyReport
	_ = json.Unmarshal([]byte(body), &rep)
	if code != 503 || rep.Checks["db.dep"] != "down: connection refused" {
		t.Errorf("readyz with a dependency down = %d %s", code, body)
	}
	down.set(nil, nil)
	admin.SetReady(false) // draining
	if code, _ := get(t, base+"/readyz"); code != 503 {
		t.Errorf("readyz while draining = %d, want 503", code)
	}
	if code, body := get(t, base+"/metrics"); code != 200 || strings.Contains(body, "404") {
		t.Errorf("metrics = %d", code)
	}
}

// TestDetailChecks: a Detail dependency that is down leaves the binary
// ready, and shows on /healthz and in mirobody_dependency_up.
func TestDetailChecks(t *testing.T) {
	f := &fake{name: "gw", rec: &recorder{}, detail: true}
	f.set(nil, errors.New("no responders"))
	admin := NewAdmin(AdminOptions{Addr: "127.0.0.1:0", Log: quiet(), HealthInterval: 20 * time.Millisecond})
	g := NewGroup(Options{Log: quiet(), Admin: admin, Services: []Service{f}})
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Stop(context.Background()) })
	base := "http://" + admin.Addr()

	code, body := get(t, base+"/readyz")
	var ready ReadyReport
	_ = json.Unmarshal([]byte(body), &ready)
	if _, shown := ready.Checks["gw.backend"]; code != 200 || shown {
		t.Errorf("readyz with a detail dependency down = %d %s, want ready without it", code, body)
	}
	healthy := func(want string) func() bool {
		return func() bool {
			code, body := get(t, base+"/healthz")
			var rep HealthReport
			_ = json.Unmarshal([]byte(body), &rep)
			_, metrics := get(t, base+"/metrics")
			return code == 200 && rep.Details["gw.backend"] == want && rep.Details["gw.dep"] == "ok" &&
				strings.Contains(metrics, `mirobody_dependency_up{check="gw.backend"} `+map[bool]string{true: "1", false: "0"}[want == "ok"])
		}
	}
	servicetest.Eventually(t, 5*time.Second, healthy("down: no responders"), "healthz and metrics show the detail dependency down")
	f.set(nil, nil)
	servicetest.Eventually(t, 5*time.Second, healthy("ok"), "healthz and metrics show the detail dependency back")
}
