package gateway

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mirobody/mirobody-go/services/servicetest"
)

// TestHTTPMetrics: requests are counted by route template (never the raw
// path), method and status class.
func TestHTTPMetrics(t *testing.T) {
	f := startFakes(t)
	reg := prometheus.NewRegistry()
	s := New(Options{Config: testConfig(t, f.url), Log: servicetest.Logger(t), Metrics: reg})
	must(t, s.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
	})
	base := "http://" + s.Addr()
	tests := []struct {
		method, path, body string
		hdr                []string
		route              string
	}{
		{http.MethodGet, "/.well-known/oauth-protected-resource", "", nil, "/.well-known/oauth-protected-resource"},
		{http.MethodGet, "/api/sessions/s-123", "", []string{"Authorization", "Bearer " + keyGood}, "/api/sessions/:id"},
		{http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			[]string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}, "/mcp"},
		{http.MethodGet, "/no/such/path", "", nil, unmatchedRoute},
	}
	for _, tt := range tests {
		resp, _ := send(t, tt.method, base+tt.path, tt.body, tt.hdr...)
		status := strconv.Itoa(resp.StatusCode/100) + "xx"
		labels := map[string]string{"route": tt.route, "method": tt.method, "status": status}
		// The count is taken once the handler returns, which may be just
		// after the client has read the whole answer.
		servicetest.Eventually(t, 5*time.Second, func() bool {
			return counter(t, reg, "mirobody_http_requests_total", labels) == 1
		}, tt.method+" "+tt.path+" counted once as "+tt.route)
	}
	if got := counter(t, reg, "mirobody_http_requests_total", map[string]string{"route": "/api/sessions/s-123"}); got != 0 {
		t.Error("a raw path became a route label")
	}
}

func TestStatusAndMethodLabels(t *testing.T) {
	tests := []struct {
		code   int
		method string
		status string
		label  string
	}{
		{0, http.MethodGet, "2xx", "GET"},
		{204, http.MethodDelete, "2xx", "DELETE"},
		{304, http.MethodPost, "3xx", "POST"},
		{404, "PROPFIND", "4xx", "other"},
		{503, "get", "5xx", "other"},
	}
	for _, tt := range tests {
		if got := statusClass(tt.code); got != tt.status {
			t.Errorf("statusClass(%d) = %s, want %s", tt.code, got, tt.status)
		}
		if got := methodLabel(tt.method); got != tt.label {
			t.Errorf("methodLabel(%s) = %s, want %s", tt.method, got, tt.label)
		}
	}
}

// counter sums the counters name whose labels include labels.
func counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	must(t, err)
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue metrics
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}
