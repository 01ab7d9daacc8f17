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
	// HealthInterval is how often every check runs for /healthz and the
	// mirobody_dependency_up metric; zero means 5 s.
	HealthInterval time.Duration
}

// Admin serves /healthz (alive, with the last state of every dependency),
// /readyz (every dependency the service needs reachable, and not draining)
// and /metrics.
type Admin struct {
	opts   AdminOptions
	ready  atomic.Bool
	mu     sync.Mutex
	checks []Check
	health map[string]string // last result of every check, under mu
	up     *prometheus.GaugeVec
	srv    *http.Server
	ln     net.Listener
	stop   chan struct{}
	done   chan struct{}
}

// NewAdmin returns an Admin listener that is not started.
func NewAdmin(opts AdminOptions) *Admin {
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	if opts.HealthInterval <= 0 {
		opts.HealthInterval = 5 * time.Second
	}
	up := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "mirobody_dependency_up",
		Help: "Whether a dependency answered its last health check (1) or not (0), by check."}, []string{"check"})
	if err := opts.Registry.Register(up); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			up = are.ExistingCollector.(*prometheus.GaugeVec)
		}
	}
	return &Admin{opts: opts, up: up, health: map[string]string{}}
}

// AddChecks adds dependencies.
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
	mux.HandleFunc("GET /healthz", a.healthz)
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

// HealthReport is the JSON body of /healthz: the process is alive, and
// Details holds every dependency's state at its last check ("ok" or
// "down: <reason>"), those that do not decide readiness included.
type HealthReport struct {
	Status  string            `json:"status"`
	Details map[string]string `json:"details"`
}

// Report runs every readiness check (not the Detail ones) concurrently and
// returns the combined result.
func (a *Admin) Report(ctx context.Context) ReadyReport {
	rep := ReadyReport{Ready: a.ready.Load(), Status: "ready", Checks: map[string]string{}}
	for name, res := range a.probe(ctx, false) {
		rep.Checks[name] = res
		if res != "ok" {
			rep.Ready = false
		}
	}
	if !rep.Ready {
		rep.Status = "not ready"
	}
	return rep
}

// probe runs the checks (with the Detail ones when all is set)
// concurrently and returns each one's result.
func (a *Admin) probe(ctx context.Context, all bool) map[string]string {
	a.mu.Lock()
	checks := append([]Check(nil), a.checks...)
	a.mu.Unlock()
	out := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range checks {
		if c.Detail && !all {
			continue
		}
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
			out[c.Name] = res
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// monitor runs every check each HealthInterval, for /healthz and the
// metric, until Stop. Liveness probes then never wait on a dependency.
func (a *Admin) monitor() {
	defer close(a.done)
	t := time.NewTicker(a.opts.HealthInterval)
	defer t.Stop()
	for {
		results := a.probe(context.Background(), true)
		a.mu.Lock()
		a.health = results
		a.mu.Unlock()
		for name, res := range results {
			v := 0.0
			if res == "ok" {
				v = 1
			}
			a.up.WithLabelValues(name).Set(v)
		}
		select {
		case <-t.C:
		case <-a.stop:
			return
		}
	}
}

func (a *Admin) healthz(w http.ResponseWriter, _ *http.Request) {
	a.mu.Lock()
	rep := HealthReport{Status: "ok", Details: make(map[string]string, len(a.health))}
	for k, v := range a.health {
		rep.Details[k] = v
	}
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(rep)
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
	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 5 * time.Second}
	a.srv = srv
	go func() {
		// srv, not a.srv: Stop clears the field while this still serves.
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && a.opts.Log != nil {
			a.opts.Log.Error("admin listener failed", "err", err)
		}
	}()
	a.stop, a.done = make(chan struct{}), make(chan struct{})
	go a.monitor()
	return nil
}

// Stop ends the health checks and closes the listener.
func (a *Admin) Stop(ctx context.Context) error {
	if a.srv == nil {
		return nil
	}
	srv := a.srv
	a.srv = nil
	close(a.stop)
	<-a.done
	if err := srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("stopping admin listener: %w", err)
	}
	return nil
}
