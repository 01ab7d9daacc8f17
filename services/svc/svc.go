// Package svc runs a binary's services: it starts them in order, reports
// readiness, and on SIGTERM or SIGINT marks the binary not ready, then stops
// the services in reverse order within a grace period. An admin HTTP
// listener serves /healthz, /readyz and /metrics.
package svc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Service is one component of a binary: a micro service, an HTTP server, an
// embedded NATS server or a database cluster.
type Service interface {
	// Name identifies the service in logs and readiness output.
	Name() string
	// Start brings the service up; it must return once the service serves.
	Start(ctx context.Context) error
	// Stop drains work in flight and releases resources before ctx ends.
	Stop(ctx context.Context) error
}

// Check is one dependency of a service.
type Check struct {
	// Name appears as the key in /readyz and /healthz output.
	Name string
	// Probe returns nil when the dependency is reachable.
	Probe func(ctx context.Context) error
	// Detail marks a dependency the service serves without (the gateway
	// and the services behind it): it shows on /healthz and in the
	// mirobody_dependency_up metric, but never makes the binary unready,
	// because a load balancer that drops every replica during a backend
	// outage turns answers (503 unavailable, or whatever still works) into
	// connection errors.
	Detail bool
}

// Checker is implemented by services that contribute readiness checks; they
// are read once the service has started.
type Checker interface {
	Checks() []Check
}

// Options configures Run.
type Options struct {
	// Services start in this order and stop in the reverse order.
	Services []Service
	// Admin serves health and metrics; nil means no admin listener.
	Admin *Admin
	// Grace bounds the whole stop sequence; zero means 20 s.
	Grace time.Duration
	// Log receives lifecycle lines. Required.
	Log *slog.Logger
	// OnReady runs once every service has started.
	OnReady func()
}

// Run starts every service, waits for ctx to end or for SIGTERM/SIGINT, and
// then stops them. It returns nil after a clean stop, so the binary exits 0.
func Run(ctx context.Context, opts Options) error {
	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	g := NewGroup(opts)
	if err := g.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	opts.Log.Info("stopping", "reason", context.Cause(ctx))
	return g.Stop(context.Background())
}

// Group is the start/stop sequence of Run without the signal handling, for
// tests and for embedding.
type Group struct {
	opts    Options
	started []Service
}

// NewGroup returns a Group for opts.
func NewGroup(opts Options) *Group {
	if opts.Grace <= 0 {
		opts.Grace = 20 * time.Second
	}
	return &Group{opts: opts}
}

// Start starts the admin listener, then every service in order. When one
// fails, the ones already started are stopped again.
func (g *Group) Start(ctx context.Context) error {
	log := g.opts.Log
	if a := g.opts.Admin; a != nil {
		if err := a.Start(ctx); err != nil {
			return err
		}
	}
	for _, s := range g.opts.Services {
		t0 := time.Now()
		if err := s.Start(ctx); err != nil {
			stopCtx, cancel := context.WithTimeout(context.Background(), g.opts.Grace)
			defer cancel()
			_ = g.stopStarted(stopCtx)
			if a := g.opts.Admin; a != nil {
				_ = a.Stop(stopCtx)
			}
			return fmt.Errorf("starting %s: %w", s.Name(), err)
		}
		g.started = append(g.started, s)
		// Checks are read after Start, since they use what Start built.
		if c, ok := s.(Checker); ok && g.opts.Admin != nil {
			for _, ch := range c.Checks() {
				ch.Name = s.Name() + "." + ch.Name // one binary may run several services
				g.opts.Admin.AddChecks(ch)
			}
		}
		log.Info("service started", "component", s.Name(), "duration_ms", time.Since(t0).Milliseconds())
	}
	if a := g.opts.Admin; a != nil {
		a.SetReady(true)
	}
	if g.opts.OnReady != nil {
		g.opts.OnReady()
	}
	return nil
}

// Stop marks the binary not ready and stops the started services in reverse
// order, all within the grace period.
func (g *Group) Stop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, g.opts.Grace)
	defer cancel()
	if a := g.opts.Admin; a != nil {
		a.SetReady(false)
	}
	err := g.stopStarted(ctx)
	if a := g.opts.Admin; a != nil {
		err = errors.Join(err, a.Stop(ctx))
	}
	return err
}

func (g *Group) stopStarted(ctx context.Context) error {
	var errs []error
	for i := len(g.started) - 1; i >= 0; i-- {
		s := g.started[i]
		t0 := time.Now()
		if err := s.Stop(ctx); err != nil {
			g.opts.Log.Error("service stop failed", "component", s.Name(), "err", err)
			errs = append(errs, fmt.Errorf("stopping %s: %w", s.Name(), err))
			continue
		}
		g.opts.Log.Info("service stopped", "component", s.Name(), "duration_ms", time.Since(t0).Milliseconds())
	}
	g.started = nil
	return errors.Join(errs...)
}
