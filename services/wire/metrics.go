package wire

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts and times the requests a Service handles, by service,
// subject and code. Several services in one process share one set.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics registers the request metrics with reg, or reuses the ones
// already registered there by another service of the same binary.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	requests, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mirobody_nats_requests_total",
		Help: "NATS requests handled, by service, subject and result code.",
	}, []string{"service", "subject", "code"}))
	if err != nil {
		return nil, err
	}
	duration, err := register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mirobody_nats_request_duration_seconds",
		Help:    "Time to handle a NATS request, by service and subject.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"service", "subject"}))
	if err != nil {
		return nil, err
	}
	return &Metrics{requests: requests, duration: duration}, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
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

func (m *Metrics) observe(service, subject string, code Code, d time.Duration) {
	if m == nil {
		return
	}
	if code == "" {
		code = "ok"
	}
	m.requests.WithLabelValues(service, subject, string(code)).Inc()
	m.duration.WithLabelValues(service, subject).Observe(d.Seconds())
}
