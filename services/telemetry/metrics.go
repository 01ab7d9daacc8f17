package telemetry

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// NewRegistry returns the Prometheus registry one binary serves at /metrics,
// with the Go runtime and process collectors registered.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// RegisterOnce registers c with reg, or returns the equal collector already
// registered there: services of one binary share a registry, and a second
// instance of a service (tests, the all-in-one binary) reuses the first's
// series instead of failing.
func RegisterOnce[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, fmt.Errorf("registering metrics: %w", err)
	}
	return c, nil
}
