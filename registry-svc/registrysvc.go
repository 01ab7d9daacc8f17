// Package registrysvc is registry-svc: Tool discovery, visibility and execution. It keeps no durable state, so any
// replica in the "registry" queue group serves any request.
package registrysvc

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/node"
	"github.com/mirobody/mirobody-go/services/svc"
)

// Name is the micro service name and subject prefix.
const Name = "registry"

// Options configures the service.
type Options struct {
	// Config supplies NATS_URL and the service's keys.
	Config *conf.Config
	// Log is the service logger. Required.
	Log *slog.Logger
	// Metrics receives the service's Prometheus metrics; nil means none.
	Metrics prometheus.Registerer
}

// Service is registry-svc.
type Service struct {
	opts Options
	log  *slog.Logger
	node *node.Node
}

// New returns a registry-svc that is not started.
func New(opts Options) *Service {
	return &Service{opts: opts, log: opts.Log.With("component", "registry-svc")}
}

// Name implements svc.Service.
func (s *Service) Name() string { return "registry-svc" }

// Start connects to NATS and serves the endpoints.
func (s *Service) Start(ctx context.Context) error {
	cfg := s.opts.Config
	n, err := node.Start(ctx, node.Options{Name: Name, Description: "Tool discovery, visibility and execution",
		NATSURL: cfg.NATSURL, OTLPEndpoint: cfg.OTLPEndpoint, Log: s.log, Metrics: s.opts.Metrics})
	if err != nil {
		return err
	}
	s.node = n
	return nil
}

// Stop drains the endpoints and waits for requests in flight.
func (s *Service) Stop(ctx context.Context) error {
	err := s.node.Stop(ctx)
	s.node = nil
	return err
}

// Checks implements svc.Checker.
func (s *Service) Checks() []svc.Check { return s.node.Checks() }
