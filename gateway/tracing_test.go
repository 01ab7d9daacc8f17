package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/registry"
)

// An HTTP request's W3C trace context travels on into the NATS requests
// the gateway makes for it.
func TestTraceContextReachesNATS(t *testing.T) {
	f := startFakes(t)
	url := startGateway(t, testConfig(t, f.url))
	seen := make(chan string, 4)
	// A plain subscription gets a copy of every request, beside the queue group.
	sub, err := f.nc.Subscribe(registry.ToolsCall.Subject, func(m *nats.Msg) { seen <- m.Header.Get("traceparent") })
	must(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	must(t, f.nc.Flush())

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	resp, body := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		"Content-Type", "application/json", "Accept", "application/json, text/event-stream",
		"traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	if resp.StatusCode != 200 {
		t.Fatalf("tools/call = %d %s", resp.StatusCode, body)
	}
	select {
	case tp := <-seen:
		if !strings.Contains(tp, traceID) {
			t.Errorf("NATS traceparent %q does not continue trace %s", tp, traceID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no registry call seen")
	}
}
