package httpobs

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestServerSpans: with or without an exporter, a request runs in a
// server span that continues the caller's trace, and the response names
// it; only with one is the span recorded.
func TestServerSpans(t *testing.T) {
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	tests := []struct {
		name      string
		exporting bool
	}{
		{name: "exported", exporting: true},
		{name: "nothing exports", exporting: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			opts := []sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(rec)}
			if !tt.exporting {
				opts = append(opts, sdktrace.WithSampler(sdktrace.NeverSample()))
			}
			tp := sdktrace.NewTracerProvider(opts...)
			t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
			var seen trace.Span
			var recording bool
			h := ServerSpans(TraceIDs(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen = trace.SpanFromContext(r.Context())
				recording = seen.IsRecording()
				w.WriteHeader(http.StatusNoContent)
			})), tp, tt.exporting)
			req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)

			sc := seen.SpanContext()
			if sc.TraceID().String() != traceID || sc.SpanID().String() == "00f067aa0ba902b7" {
				t.Fatalf("handler span %v does not continue the caller's trace in a span of its own", sc)
			}
			if got := w.Header().Get("traceparent"); !strings.Contains(got, traceID+"-"+sc.SpanID().String()) {
				t.Errorf("response traceparent %q does not name the server span", got)
			}
			if got := w.Header().Get(HeaderRequestID); got != traceID {
				t.Errorf("X-Request-Id %q, want %s", got, traceID)
			}
			ended := rec.Ended()
			if recording != tt.exporting || (len(ended) == 1) != tt.exporting {
				t.Fatalf("span recording %v, %d recorded (exporting %v)", recording, len(ended), tt.exporting)
			}
			if tt.exporting && (ended[0].Name() != "POST /mcp" || ended[0].SpanKind() != trace.SpanKindServer) {
				t.Errorf("span %s kind %v, want POST /mcp, server", ended[0].Name(), ended[0].SpanKind())
			}
		})
	}
}
