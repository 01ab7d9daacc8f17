package svc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// CheckTimeout bounds each readiness probe, so /readyz answers promptly
// even when a dependency hangs.
const CheckTimeout = 800 * time.Millisecond

// AdminOptions configures an Admin listener.
type AdminOptions struct {
	// Addr is the host:port to listen on; port 0 picks a free one.
	Addr string
	// Registry is served at /metrics; nil means an empty registry.
	Registry *prometheus.Registry
	// Log receives listener errors.
	Log *slog.Logger
}

// Admin serves /healthz (alive), /readyz (every dependency reachable and not
// draining) and /metrics.
type Admin struct {
	opts   AdminOptions
	ready  atomic.Bool
	mu     sync.Mutex
	checks []Check
	srv    *http.Server
	ln     net.Listener
}

// NewAdmin returns an Admin listener that is not started.
func NewAdmin(opts AdminOptions) *Admin {
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	return &Admin{opts: opts}
}

// AddChecks adds readiness dependencies.
func (a *Admin) AddChecks(c ...Check) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.checks = append(a.checks, c...)
}

// SetReady marks the binary ready (all started) or not (starting, draining).
func (a *Admin) SetReady(ok bool) { a.ready.Store(ok) }

// Addr returns the address the listener is bound to, once started.
func (a *Admin) Addr() string {
	if a.ln == nil {
		return ""
	}
	return a.ln.Addr().String()
}

// Handler returns the admin HTTP handler.
func (a *Admin) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", a.readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.opts.Registry, promhttp.HandlerOpts{}))
	return mux
}

// ReadyReport is the JSON body of /readyz.
type ReadyReport struct {
	Ready  bool              `json:"ready"`
	Status string            `json:"status"`
	Checks map[string]string `json:"checks"`
}

// Report runs every check concurrently and returns the combined result.
func (a *Admin) Report(ctx context.Context) ReadyReport {
	a.mu.Lock()
	checks := append([]Check(nil), a.checks...)
	a.mu.Unlock()
	rep := ReadyReport{Ready: a.ready.Load(), Status: "ready", Checks: map[string]string{}}
	if !rep.Ready {
		rep.Status = "not ready"
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, CheckTimeout)
			defer cancel()
			res := "ok"
			if err := c.Probe(cctx); err != nil {
				res = "down: " + err.Error()
			}
			mu.Lock()
			rep.Checks[c.Name] = res
			if res != "ok" {
				rep.Ready = false
				rep.Status = "not ready"
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return rep
}

func (a *Admin) readyz(w http.ResponseWriter, r *http.Request) {
	rep := a.Report(r.Context())
	w.Header().Set("Content-Type", "application/json")
	if !rep.Ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(rep)
}

// Start binds the listener and serves in the background.
func (a *Admin) Start(context.Context) error {
	ln, err := net.Listen("tcp", a.opts.Addr)
	if err != nil {
		return fmt.Errorf("listening on admin address %s: %w", a.opts.Addr, err)
	}
	a.ln = ln
	a.srv = &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && a.opts.Log != nil {
			a.opts.Log.Error("admin listener failed", "err", err)
		}
	}()
	return nil
}

// Stop closes the listener.
func (a *Admin) Stop(ctx context.Context) error {
	if a.srv == nil {
		return nil
	}
	if err := a.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("stopping admin listener: %w", err)
	}
	return nil
}
