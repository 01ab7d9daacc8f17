package agentsvc

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/services/telemetry"
)

// otherModel labels a model a turn asked for that is not its provider's
// configured one: requests name models freely, so only configured names
// become label values (design.md, "Metrics").
const otherModel = "other"

// llmMetrics measures the Deep agent's model calls by provider (the
// configured name) and model.
type llmMetrics struct {
	calls   *prometheus.CounterVec
	latency *prometheus.HistogramVec
	ttft    *prometheus.HistogramVec
	tokens  *prometheus.CounterVec
	retries *prometheus.CounterVec
}

func newLLMMetrics(reg prometheus.Registerer) (*llmMetrics, error) {
	var m llmMetrics
	var err error
	buckets := prometheus.ExponentialBuckets(0.01, 2, 14)
	if m.calls, err = telemetry.RegisterOnce(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mirobody_agent_llm_calls_total",
		Help: "Model calls (one per agent step), by provider, model and outcome (ok or the error kind).",
	}, []string{"provider", "model", "outcome"})); err != nil {
		return nil, err
	}
	if m.latency, err = telemetry.RegisterOnce(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "mirobody_agent_llm_call_duration_seconds", Help: "Time of one model call, retries included, by provider and model.", Buckets: buckets,
	}, []string{"provider", "model"})); err != nil {
		return nil, err
	}
	if m.ttft, err = telemetry.RegisterOnce(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "mirobody_agent_llm_time_to_first_token_seconds", Help: "Time from a model call to its first streamed text or reasoning, by provider and model.", Buckets: buckets,
	}, []string{"provider", "model"})); err != nil {
		return nil, err
	}
	if m.tokens, err = telemetry.RegisterOnce(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mirobody_agent_llm_tokens_total", Help: "Tokens reported by the provider, by provider, model and direction (input or output).",
	}, []string{"provider", "model", "direction"})); err != nil {
		return nil, err
	}
	if m.retries, err = telemetry.RegisterOnce(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mirobody_agent_llm_retries_total", Help: "HTTP attempts beyond the first that the provider SDK made for a model call, by provider and model.",
	}, []string{"provider", "model"})); err != nil {
		return nil, err
	}
	return &m, nil
}

// attemptsKey is the context key of a model call's attempt counter.
type attemptsKey struct{}

// countingTransport counts the HTTP attempts of the model call whose
// context the request carries: the SDKs retry inside Stream, reusing it.
type countingTransport struct{ next http.RoundTripper }

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if n, ok := r.Context().Value(attemptsKey{}).(*atomic.Int64); ok {
		n.Add(1)
	}
	return t.next.RoundTrip(r)
}

// httpClient is the providers' HTTP client, counting attempts.
func (m *llmMetrics) httpClient() *http.Client {
	return &http.Client{Transport: countingTransport{http.DefaultTransport}}
}

// meteredProvider measures each Stream of next.
type meteredProvider struct {
	next            llm.Provider
	m               *llmMetrics
	provider, model string
}

// Stream implements llm.Provider.
func (p *meteredProvider) Stream(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	attempts := &atomic.Int64{}
	ctx = context.WithValue(ctx, attemptsKey{}, attempts)
	start := time.Now()
	first := false
	resp, err := p.next.Stream(ctx, req, func(d llm.Delta) {
		if !first {
			first = true
			p.m.ttft.WithLabelValues(p.provider, p.model).Observe(time.Since(start).Seconds())
		}
		onDelta(d)
	})
	p.m.latency.WithLabelValues(p.provider, p.model).Observe(time.Since(start).Seconds())
	if n := attempts.Load(); n > 1 {
		p.m.retries.WithLabelValues(p.provider, p.model).Add(float64(n - 1))
	}
	outcome := "ok"
	if err != nil {
		outcome = errorKind(err)
	}
	p.m.calls.WithLabelValues(p.provider, p.model, outcome).Inc()
	if resp != nil {
		p.m.tokens.WithLabelValues(p.provider, p.model, "input").Add(float64(resp.Usage.InputTokens))
		p.m.tokens.WithLabelValues(p.provider, p.model, "output").Add(float64(resp.Usage.OutputTokens))
	}
	return resp, err
}

// errorKind is the outcome label of a failed call: the provider error's
// kind (a closed set), "cancelled", or "error".
func errorKind(err error) string {
	var le *llm.Error
	switch {
	case errors.As(err, &le) && le.Kind != "":
		if _, known := kindLabels[le.Kind]; known {
			return le.Kind
		}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "cancelled"
	}
	return "error"
}

// kindLabels are the llm.Error kinds used as outcome labels.
var kindLabels = map[string]bool{"rate_limited": true, "auth": true, "bad_request": true, "unavailable": true, "stream_broken": true}
