package registrysvc

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/servicetest"
)

// series returns the value of the counter (or the sample count of the
// histogram) name with exactly labels, and whether it exists.
func series(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if matches(m, labels) {
				if h := m.GetHistogram(); h != nil {
					return float64(h.GetSampleCount()), true
				}
				return m.GetCounter().GetValue(), true
			}
		}
	}
	return 0, false
}

func matches(m *dto.Metric, labels map[string]string) bool {
	if len(m.GetLabel()) != len(labels) {
		return false
	}
	for _, l := range m.GetLabel() {
		if labels[l.GetName()] != l.GetValue() {
			return false
		}
	}
	return true
}

// TestToolMetrics: every call is counted by tool, kind and outcome and
// timed; an external tool is labelled "external" whatever its name, so
// names chosen by accounts never become label values.
func TestToolMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := startWith(t, servicetest.NATS(t), map[string]string{"MCP_TOOL_DIRS": "testdata/discovery,builtin", "PYTHON_WORKERS": "1",
		"MCP_CLIENT_ALLOW_PRIVATE": "true"}, reg)
	srv := echoServer(t, servicetest.MCPServerOptions{})
	turn := []agent.ServerSpec{{Name: "ext", URL: srv.URL}}
	ctx := context.Background()
	calls := []struct {
		name, args string
		servers    []agent.ServerSpec
	}{
		{"hello", `{"name":"a"}`, nil},
		{"hello", `{"name":"b"}`, nil},
		{"resolve_indicator", `{"name":"hdl"}`, nil},
		{"resolve_indicator", `{"bogus":1}`, nil},
		{"ext__echo", `{"text":"hi"}`, turn},
	}
	for _, c := range calls {
		_, _ = e.client.Call(ctx, &registry.CallRequest{Caller: alice, Name: c.name, Arguments: json.RawMessage(c.args), Servers: c.servers})
	}
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"mirobody_registry_tool_calls_total", map[string]string{"tool": "hello", "kind": "python", "outcome": "ok"}, 2},
		{"mirobody_registry_tool_calls_total", map[string]string{"tool": "resolve_indicator", "kind": "builtin", "outcome": "ok"}, 1},
		{"mirobody_registry_tool_calls_total", map[string]string{"tool": "resolve_indicator", "kind": "builtin", "outcome": "invalid_argument"}, 1},
		{"mirobody_registry_tool_calls_total", map[string]string{"tool": "external", "kind": "external", "outcome": "ok"}, 1},
		{"mirobody_registry_tool_call_duration_seconds", map[string]string{"tool": "hello", "kind": "python"}, 2},
		{"mirobody_registry_tool_result_bytes", map[string]string{"tool": "external", "kind": "external"}, 1},
		{"mirobody_nats_requests_total", map[string]string{"service": "registry", "subject": "registry.tools.call", "code": "ok"}, 4},
	}
	for _, tt := range tests {
		if got, ok := series(t, reg, tt.name, tt.labels); !ok || got != tt.want {
			t.Errorf("%s%v = %v (found %v), want %v", tt.name, tt.labels, got, ok, tt.want)
		}
	}
	if _, ok := series(t, reg, "mirobody_registry_tool_calls_total", map[string]string{"tool": "ext__echo", "kind": "external", "outcome": "ok"}); ok {
		t.Error("an external tool's own name became a label value")
	}
}
