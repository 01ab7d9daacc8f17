package wire

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mirobody/mirobody-go/services/telemetry"
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
	requests, err := telemetry.RegisterOnce(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mirobody_nats_requests_total",
		Help: "NATS requests handled, by service, subject and result code.",
	}, []string{"service", "subject", "code"}))
	if err != nil {
		return nil, err
	}
	duration, err := telemetry.RegisterOnce(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mirobody_nats_request_duration_seconds",
		Help:    "Time to handle a NATS request, by service and subject.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"service", "subject"}))
	if err != nil {
		return nil, err
	}
	return &Metrics{requests: requests, duration: duration}, nil
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
