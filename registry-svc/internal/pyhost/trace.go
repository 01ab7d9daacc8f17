package pyhost

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// hostTiming is the host's wall-clock timing of one call, in Unix
// nanoseconds (Python's time.time_ns, the clock time.Now reads): when the
// host read the request, when the call's task started, when the tool
// itself started (0 when it never did) and when the reply was ready.
type hostTiming struct {
	ReceivedNS int64 `json:"received_ns"`
	StartedNS  int64 `json:"started_ns"`
	RunNS      int64 `json:"run_ns"`
	EndedNS    int64 `json:"ended_ns"`
}

// traceparent is ctx's span context as a W3C traceparent value ("" when
// ctx holds none).
func traceparent(ctx context.Context) string {
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// record adds the span of one call's run in the host, a child of ctx's
// span, from the host's own timing (registry-svc/design.md "Tracing"): the
// host is standard-library Python, with no OpenTelemetry SDK to export
// spans itself. sent is when the request left; r and err are what
// request returned.
func (p *Pool) record(ctx context.Context, w *worker, name string, sent time.Time, r *message, err error) {
	back := time.Now()
	start, end := sent, back
	var t hostTiming
	if r != nil && r.Timing != nil {
		t = *r.Timing
		start, end = within(t.ReceivedNS, sent, back), within(t.EndedNS, sent, back)
	}
	outcome := callOutcome(ctx, r, err)
	attrs := []attribute.KeyValue{
		attribute.String("mirobody.tool", name), attribute.String("mirobody.tool.outcome", outcome),
		attribute.Int("mirobody.pyhost.worker", w.idx), attribute.Int("mirobody.pyhost.pid", w.cmd.Process.Pid),
	}
	if t.StartedNS != 0 {
		attrs = append(attrs, attribute.Float64("mirobody.pyhost.queue_ms", ms(t.StartedNS-t.ReceivedNS)))
	}
	if t.RunNS != 0 {
		attrs = append(attrs, attribute.Float64("mirobody.pyhost.thread_wait_ms", ms(t.RunNS-t.StartedNS)),
			attribute.Float64("mirobody.pyhost.run_ms", ms(t.EndedNS-t.RunNS)))
	}
	_, span := p.opts.Tracer.Start(ctx, "pyhost "+name, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	if t.RunNS != 0 {
		span.AddEvent("tool started", trace.WithTimestamp(within(t.RunNS, start, end)))
	}
	if outcome != "ok" && outcome != "tool_error" {
		span.SetStatus(codes.Error, outcome)
		span.SetAttributes(attribute.String("error.type", outcome))
	}
	span.End(trace.WithTimestamp(end))
}

// within is the Unix-nanosecond time ns, kept between lo and hi: the
// host's times can only lie inside the request's round trip, and a clock
// step must not make a span start before its parent.
func within(ns int64, lo, hi time.Time) time.Time {
	if ns == 0 {
		return lo
	}
	t := time.Unix(0, ns)
	switch {
	case t.Before(lo):
		return lo
	case t.After(hi):
		return hi
	}
	return t
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// callOutcome names how a call ended: ok, tool_error (the tool failed, a
// result with isError), cancelled, host_stopped or error (the host could
// not run it).
func callOutcome(ctx context.Context, r *message, err error) string {
	switch {
	case errors.Is(err, ErrHostStopped):
		return "host_stopped"
	case err != nil && ctx.Err() != nil:
		return "cancelled"
	case err != nil, r.Invalid, r.Error != "":
		return "error"
	case r.Cancelled || r.Result == nil:
		return "cancelled"
	case r.Result.IsError:
		return "tool_error"
	}
	return "ok"
}
