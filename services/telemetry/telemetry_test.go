package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

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
	tp, err := NewTracerProvider(context.Background(), TracerOptions{Service: "vfs", Version: "1.2.3"})
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
