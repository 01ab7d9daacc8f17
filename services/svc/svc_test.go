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
	probeErr error
}

func (f *fake) Name() string { return f.name }
func (f *fake) Start(context.Context) error {
	f.rec.add("start " + f.name)
	return f.startErr
}
func (f *fake) Stop(context.Context) error { f.rec.add("stop " + f.name); return nil }
func (f *fake) Checks() []Check {
	return []Check{{Name: "dep", Probe: func(context.Context) error { return f.probeErr }}}
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
	down.probeErr = errors.New("connection refused")
	code, body := get(t, base+"/readyz")
	var rep ReadyReport
	_ = json.Unmarshal([]byte(body), &rep)
	if code != 503 || rep.Checks["db.dep"] != "down: connection refused" {
		t.Errorf("readyz with a dependency down = %d %s", code, body)
	}
	down.probeErr = nil
	admin.SetReady(false) // draining
	if code, _ := get(t, base+"/readyz"); code != 503 {
		t.Errorf("readyz while draining = %d, want 503", code)
	}
	if code, body := get(t, base+"/metrics"); code != 200 || strings.Contains(body, "404") {
		t.Errorf("metrics = %d", code)
	}
}
