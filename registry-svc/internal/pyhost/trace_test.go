package pyhost

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestCallSpan: a call inside a recording span sends its traceparent to the
// host (a tool reads it through mirobody.traceparent) and gets a child span
// timed by the host, with the tool, outcome and worker.
func TestCallSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tracer := tp.Tracer("test")
	p, _, _ := startPool(t, Options{Workers: 1, Tracer: tracer}, "../../testdata/content")

	tests := []struct {
		tool, args string
		outcome    string
		minRun     time.Duration
	}{
		{"trace_parent", `{}`, "ok", 0},
		{"sleepy", `{"seconds":0.05}`, "ok", 50 * time.Millisecond},
		{"bad_block", `{}`, "tool_error", 0},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			ctx, parent := tracer.Start(context.Background(), "tool "+tt.tool)
			out, err := call(t, p, ctx, tt.tool, tt.args)
			parent.End()
			if err != nil {
				t.Fatal(err)
			}
			sc := parent.SpanContext()
			if tt.tool == "trace_parent" && !strings.Contains(out, sc.TraceID().String()+"-"+sc.SpanID().String()) {
				t.Errorf("the tool saw traceparent %s, want the caller's span %s", out, sc.SpanID())
			}
			var got sdktrace.ReadOnlySpan
			for _, s := range rec.Ended() {
				if s.Name() == "pyhost "+tt.tool {
					got = s
				}
			}
			if got == nil {
				t.Fatalf("no span pyhost %s", tt.tool)
			}
			if got.Parent().SpanID() != sc.SpanID() {
				t.Errorf("parent %s, want the caller's span %s", got.Parent().SpanID(), sc.SpanID())
			}
			attrs := map[attribute.Key]attribute.Value{}
			for _, a := range got.Attributes() {
				attrs[a.Key] = a.Value
			}
			if attrs["mirobody.tool"].AsString() != tt.tool || attrs["mirobody.tool.outcome"].AsString() != tt.outcome {
				t.Errorf("attributes %v, want tool %s outcome %s", got.Attributes(), tt.tool, tt.outcome)
			}
			if _, ok := attrs["mirobody.pyhost.worker"]; !ok {
				t.Errorf("no worker attribute: %v", got.Attributes())
			}
			if d := got.EndTime().Sub(got.StartTime()); d < tt.minRun || got.StartTime().Before(parent.(sdktrace.ReadOnlySpan).StartTime()) {
				t.Errorf("span lasts %s from %s, want at least %s within its parent", d, got.StartTime(), tt.minRun)
			}
			if run := attrs["mirobody.pyhost.run_ms"].AsFloat64(); run < float64(tt.minRun.Milliseconds()) {
				t.Errorf("run_ms = %v, want at least %d", run, tt.minRun.Milliseconds())
			}
		})
	}

	// Outside a recording span: no span, and the tool sees no trace.
	before := len(rec.Ended())
	out, err := call(t, p, context.Background(), "trace_parent", `{}`)
	if err != nil || !strings.Contains(out, "none") || len(rec.Ended()) != before {
		t.Errorf("without a span: %s %v, %d new spans", out, err, len(rec.Ended())-before)
	}
}
