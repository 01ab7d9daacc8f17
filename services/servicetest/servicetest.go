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
	s := natsx.NewServer(natsx.ServerOptions{})
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("starting embedded NATS: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s.ClientURL()
}

// SecureServer is an embedded NATS server that admits only the identities
// of natsx.Grants, each with its permissions, as dev and deploy/ do.
type SecureServer struct {
	// URL is the client URL.
	URL string
	// CredsDir holds every identity's seed (NATS_CREDS_DIR).
	CredsDir string
}

// SecureNATS starts a secured embedded NATS server on a free port for the
// test, with a fresh seed per identity.
func SecureNATS(t testing.TB) *SecureServer {
	t.Helper()
	dir := t.TempDir()
	keys, err := natsx.EnsureSeeds(dir)
	if err != nil {
		t.Fatal(err)
	}
	users, err := natsx.ServerUsers(keys)
	if err != nil {
		t.Fatal(err)
	}
	s := natsx.NewServer(natsx.ServerOptions{Users: users})
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("starting embedded NATS: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return &SecureServer{URL: s.ClientURL(), CredsDir: dir}
}

// Conn connects as identity, with its seed and inbox prefix, and closes the
// connection at cleanup. Extra options come last (an error handler, say).
func (s *SecureServer) Conn(t testing.TB, identity string, extra ...nats.Option) *nats.Conn {
	t.Helper()
	nk, err := nats.NkeyOptionFromSeed(natsx.SeedFile(s.CredsDir, identity))
	if err != nil {
		t.Fatal(err)
	}
	opts := append([]nats.Option{nk, nats.CustomInboxPrefix(natsx.InboxPrefix(identity)),
		nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond)}, extra...)
	nc, err := nats.Connect(s.URL, opts...)
	if err != nil {
		t.Fatalf("connecting to NATS as %s: %v", identity, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Client returns a wire client connected as identity.
func (s *SecureServer) Client(t testing.TB, identity string) *wire.Client {
	t.Helper()
	return wire.NewClient(wire.ClientOptions{Conn: s.Conn(t, identity)})
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
