// Package stack assembles the four services into one process (the
// `mirobody` binary) or any subset of them. It is the only package that
// imports every service.
package stack

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	agentsvc "github.com/mirobody/mirobody-go/agent-svc"
	"github.com/mirobody/mirobody-go/gateway"
	registrysvc "github.com/mirobody/mirobody-go/registry-svc"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/svc"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

// Targets in start order: storage first, the HTTP edge last, so the edge
// never takes a request before what it calls can answer.
var Targets = []string{"vfs-svc", "registry-svc", "agent-svc", "gateway"}

// ParseTargets parses a comma-separated target list ("all" for every one)
// and returns it in start order.
func ParseTargets(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" || s == "all" {
		return Targets, nil
	}
	want := map[string]bool{}
	for _, t := range strings.Split(s, ",") {
		t = strings.TrimSpace(t)
		if !slices.Contains(Targets, t) {
			return nil, fmt.Errorf("unknown target %q: want any of %s, or all", t, strings.Join(Targets, ", "))
		}
		want[t] = true
	}
	var out []string
	for _, t := range Targets {
		if want[t] {
			out = append(out, t)
		}
	}
	return out, nil
}

// Build returns the services for targets, sharing cfg and the metrics
// registry. Services read cfg when they start, so earlier components may
// still fill it in.
func Build(cfg *conf.Config, log *slog.Logger, reg prometheus.Registerer, targets []string) []svc.Service {
	out := make([]svc.Service, 0, len(targets))
	for _, t := range targets {
		out = append(out, New(t, cfg, log, reg))
	}
	return out
}

// New returns one service by target name; it panics on an unknown name,
// which ParseTargets rules out.
func New(target string, cfg *conf.Config, log *slog.Logger, reg prometheus.Registerer) svc.Service {
	switch target {
	case "vfs-svc":
		return vfssvc.New(vfssvc.Options{Config: cfg, Log: log, Metrics: reg})
	case "registry-svc":
		return registrysvc.New(registrysvc.Options{Config: cfg, Log: log, Metrics: reg})
	case "agent-svc":
		return agentsvc.New(agentsvc.Options{Config: cfg, Log: log, Metrics: reg})
	case "gateway":
		return gateway.New(gateway.Options{Config: cfg, Log: log, Metrics: reg})
	}
	panic("stack: unknown target " + target)
}

// Func adapts two functions to svc.Service, for start-up steps such as
// filling in configuration.
type Func struct {
	Label   string
	StartFn func() error
	StopFn  func() error
}

// Name implements svc.Service.
func (f *Func) Name() string { return f.Label }

// Start implements svc.Service.
func (f *Func) Start(_ context.Context) error {
	if f.StartFn == nil {
		return nil
	}
	return f.StartFn()
}

// Stop implements svc.Service.
func (f *Func) Stop(_ context.Context) error {
	if f.StopFn == nil {
		return nil
	}
	return f.StopFn()
}
