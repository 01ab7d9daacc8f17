package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestLoggerAddsTraceID(t *testing.T) {
	var buf bytes.Buffer
	log, err := NewLogger(LogOptions{Level: "debug", Format: "json", Writer: &buf})
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("t").Start(context.Background(), "op")
	log.InfoContext(ctx, "inside a span")
	span.End()
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if line["trace_id"] != span.SpanContext().TraceID().String() {
		t.Errorf("trace_id = %v, want %s", line["trace_id"], span.SpanContext().TraceID())
	}
}

func TestLoggerOptions(t *testing.T) {
	tests := []struct {
		opts LogOptions
		ok   bool
	}{
		{LogOptions{Level: "warn", Format: "text"}, true},
		{LogOptions{Format: "auto"}, true},
		{LogOptions{Level: "loud"}, false},
		{LogOptions{Format: "xml"}, false},
	}
	for _, tt := range tests {
		tt.opts.Writer = &bytes.Buffer{}
		if _, err := NewLogger(tt.opts); (err == nil) != tt.ok {
			t.Errorf("NewLogger(%+v) err = %v", tt.opts, err)
		}
	}
}

func TestTracerProviderNamesService(t *testing.T) {
	// An endpoint makes the provider record; the collector accepts anything.
	collector := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(collector.Close)
	tp, err := NewTracerProvider(context.Background(), TracerOptions{Service: "vfs", Version: "1.2.3", OTLPEndpoint: collector.URL})
	if err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	tp.RegisterSpanProcessor(rec)
	_, span := tp.Tracer("t").Start(context.Background(), "op")
	span.End()
	attrs := rec.Ended()[0].Resource().Attributes()
	found := false
	for _, a := range attrs {
		if a.Key == "service.name" && a.Value.AsString() == "vfs" {
			found = true
		}
	}
	if !found {
		t.Errorf("service.name not set: %v", attrs)
	}
	_ = tp.Shutdown(context.Background())
}

// TestTracerProviderWithoutExporter: with no OTLP endpoint nothing is
// recorded, yet every span has ids, continues its parent's trace, and the
// trace context still propagates.
func TestTracerProviderWithoutExporter(t *testing.T) {
	tp, err := NewTracerProvider(context.Background(), TracerOptions{Service: "gateway"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	rec := tracetest.NewSpanRecorder()
	tp.RegisterSpanProcessor(rec)
	prop := propagation.TraceContext{}
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := []struct {
		name string
		ctx  context.Context
	}{
		{"root", context.Background()},
		{"remote parent", prop.Extract(context.Background(), propagation.MapCarrier{"traceparent": parent})},
	}
	for _, tt := range tests {
		ctx, span := tp.Tracer("t").Start(tt.ctx, "op")
		span.End()
		sc := span.SpanContext()
		if span.IsRecording() || !sc.IsValid() {
			t.Errorf("%s: recording %v, valid %v; want a valid non-recording span", tt.name, span.IsRecording(), sc.IsValid())
		}
		if want := trace.SpanContextFromContext(tt.ctx).TraceID(); want.IsValid() && sc.TraceID() != want {
			t.Errorf("%s: trace id %s, want the parent's %s", tt.name, sc.TraceID(), want)
		}
		out := propagation.MapCarrier{}
		prop.Inject(ctx, out)
		if !strings.Contains(out["traceparent"], sc.TraceID().String()) {
			t.Errorf("%s: propagated traceparent %q lacks trace id %s", tt.name, out["traceparent"], sc.TraceID())
		}
	}
	if n := len(rec.Ended()); n != 0 {
		t.Errorf("%d spans reached a span processor, want none", n)
	}
}
