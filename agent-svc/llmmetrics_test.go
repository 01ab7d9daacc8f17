package agentsvc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
)

// value is the counter value, or histogram sample count, of the series
// name with exactly labels (-1 when absent).
func value(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue metrics
				}
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
			return m.GetCounter().GetValue()
		}
	}
	return -1
}

// TestLLMMetrics: a model call is counted and timed by provider and
// configured model, with its tokens, time to first token and the SDK's
// retries; a model the turn names itself is labelled "other".
func TestLLMMetrics(t *testing.T) {
	srv := scripted.New(scripted.Sequence(scripted.Step{Fault: &scripted.Fault{Status: 503}},
		scripted.Step{Text: "hello", InputTokens: 11, OutputTokens: 7}, scripted.Step{Text: "again"}))
	t.Cleanup(srv.Close)
	file := filepath.Join(t.TempDir(), "config.yaml")
	body := fmt.Sprintf("PROVIDERS_DEEP:\n  sp: {type: openai, model: m1, base_url: %q}\nPROVIDER_RETRIES: 1\n", srv.OpenAIBaseURL())
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := conf.Load(conf.LoadOptions{Path: file, LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	ps := newProviderSet(res.Config, agent.AgentDeep, res.Config.ProvidersDeep)
	if ps.metrics, err = newLLMMetrics(reg); err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{"", "a-model-the-turn-chose"} {
		p, err := ps.resolve("sp", model)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.provider.Stream(context.Background(), &llm.Request{Model: p.model, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, func(llm.Delta) {}); err != nil {
			t.Fatalf("model %q: %v", model, err)
		}
	}
	m1 := map[string]string{"provider": "sp", "model": "m1"}
	with := func(k, v string) map[string]string {
		out := map[string]string{k: v}
		for a, b := range m1 {
			out[a] = b
		}
		return out
	}
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"mirobody_agent_llm_calls_total", with("outcome", "ok"), 1},
		{"mirobody_agent_llm_retries_total", m1, 1},
		{"mirobody_agent_llm_tokens_total", with("direction", "input"), 11},
		{"mirobody_agent_llm_tokens_total", with("direction", "output"), 7},
		{"mirobody_agent_llm_call_duration_seconds", m1, 1},
		{"mirobody_agent_llm_time_to_first_token_seconds", m1, 1},
		{"mirobody_agent_llm_calls_total", map[string]string{"provider": "sp", "model": otherModel, "outcome": "ok"}, 1},
	}
	for _, tt := range tests {
		if got := value(t, reg, tt.name, tt.labels); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
}
