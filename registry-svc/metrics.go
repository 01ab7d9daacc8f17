package registrysvc

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/telemetry"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Tool kinds, the kind label of the tool metrics.
const (
	kindBuiltin  = "builtin"
	kindPython   = "python"
	kindExternal = "external"
)

// externalToolLabel is the tool label of every external tool: their names
// are chosen by accounts (and by the servers they add), so they are not
// bounded and never become label values (design.md, "Metrics").
const externalToolLabel = "external"

// toolMetrics counts and times tool calls by tool, kind and outcome. The
// outcome is "ok", "tool_error" (a result with isError) or the wire code of
// a call that could not be made, a closed set.
type toolMetrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	bytes    *prometheus.HistogramVec
}

// newToolMetrics registers the tool metrics with reg, or reuses those that
// another registry-svc of the same binary registered.
func newToolMetrics(reg prometheus.Registerer) (*toolMetrics, error) {
	calls, err := telemetry.RegisterOnce(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mirobody_registry_tool_calls_total",
		Help: "Tool calls, by tool (\"external\" for every external MCP server's tool), kind and outcome.",
	}, []string{"tool", "kind", "outcome"}))
	if err != nil {
		return nil, err
	}
	duration, err := telemetry.RegisterOnce(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mirobody_registry_tool_call_duration_seconds",
		Help:    "Time to run a tool call, by tool and kind.",
		Buckets: prometheus.ExponentialBuckets(0.0002, 2, 18),
	}, []string{"tool", "kind"}))
	if err != nil {
		return nil, err
	}
	bytes, err := telemetry.RegisterOnce(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mirobody_registry_tool_result_bytes",
		Help:    "Size of a tool call's result (content blocks and structured content), by tool and kind.",
		Buckets: prometheus.ExponentialBuckets(64, 4, 10),
	}, []string{"tool", "kind"}))
	if err != nil {
		return nil, err
	}
	return &toolMetrics{calls: calls, duration: duration, bytes: bytes}, nil
}

// labels names e's tool and kind as the metrics see them.
func (e *entry) labels() (tool, kind string) {
	switch {
	case e.ext != nil:
		return externalToolLabel, kindExternal
	case e.builtin != nil:
		return e.tool.Name, kindBuiltin
	}
	return e.tool.Name, kindPython
}

// observe records one call of e that took d and ended with resp or err.
func (m *toolMetrics) observe(e *entry, d time.Duration, resp *registry.CallResponse, err error) {
	if m == nil {
		return
	}
	tool, kind := e.labels()
	outcome := outcomeOf(resp, err)
	m.calls.WithLabelValues(tool, kind, outcome).Inc()
	m.duration.WithLabelValues(tool, kind).Observe(d.Seconds())
	if resp != nil {
		m.bytes.WithLabelValues(tool, kind).Observe(float64(resultBytes(resp)))
	}
}

// outcomeOf names how a call ended: ok, tool_error, or the error's code.
func outcomeOf(resp *registry.CallResponse, err error) string {
	switch {
	case err != nil:
		return string(wire.CodeOf(err))
	case resp.IsError:
		return "tool_error"
	}
	return "ok"
}

// resultSize is resultBytes of resp, 0 without one.
func resultSize(resp *registry.CallResponse) int {
	if resp == nil {
		return 0
	}
	return resultBytes(resp)
}

// resultBytes is the encoded size of a result's content, which is what
// crosses NATS and reaches the client.
func resultBytes(resp *registry.CallResponse) int {
	n := len(resp.StructuredContent)
	for _, b := range resp.Content {
		n += len(b)
	}
	return n
}

// registerMetrics registers the tool metrics and the tool host gauges.
func (s *Service) registerMetrics() error {
	m, err := newToolMetrics(s.opts.Metrics)
	if err != nil {
		return err
	}
	s.reg.metrics = m
	restarts := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "mirobody_registry_python_host_restarts_total",
		Help: "Python tool host processes replaced after a crash or hang.",
	}, func() float64 { return float64(s.restarts.Load()) })
	tools := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "mirobody_registry_tools",
		Help: "Tools in the registry.",
	}, func() float64 { return float64(len(s.reg.current().sorted)) })
	for _, c := range []prometheus.Collector{restarts, tools} {
		if err := s.opts.Metrics.Register(c); err != nil {
			s.log.Warn("registering a metric failed", "err", err)
		}
	}
	return nil
}
