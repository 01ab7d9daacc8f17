// Package servicetest provides real dependencies for tests: an in-process
// NATS server, a fresh PostgreSQL database with migrations applied, and a
// logger that writes into the test log.
package servicetest

import (
	"context"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/natsx"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Logger returns a logger that writes into t's log and goes quiet once the
// test has finished (late lines from stopping goroutines are dropped).
func Logger(t testing.TB) *slog.Logger {
	t.Helper()
	w := &testWriter{t: t}
	t.Cleanup(w.close) // registered first, so it runs after every later cleanup
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) close() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

// NATS starts an embedded NATS server on a free port for the test and
// returns its client URL.
func NATS(t testing.TB) string {
	t.Helper()
	s := natsx.NewServer(natsx.ServerOptions{JetStream: true, StoreDir: t.TempDir()})
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("starting embedded NATS: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s.ClientURL()
}

// Conn connects to url and closes the connection at cleanup.
func Conn(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatalf("connecting to NATS: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Client returns a wire client on a fresh connection to url.
func Client(t testing.TB, url string) *wire.Client {
	t.Helper()
	return wire.NewClient(wire.ClientOptions{Conn: Conn(t, url)})
}

// Eventually polls cond every 20 ms until it holds or timeout passes.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %s", timeout, msg)
		}
		<-tick.C
	}
}

// Migrations is a service's embedded migration folder.
type Migrations = fs.FS
