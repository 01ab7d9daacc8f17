package httpobs

import (
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mirobody/mirobody-go/services/wire"
)

// ServerSpans runs next inside each request's server span, named
// "<method> <path>", continuing the caller's traceparent. When spans are
// exported it is otelhttp's handler, which records the HTTP attributes and
// events. When they are not (exporting false: the tracer provider samples
// nothing, services/telemetry/design.md), the span records nothing
// whatever is set on it, and starting it is all that counts: its ids,
// which TraceIDs returns and the NATS requests carry on. Then otelhttp's
// attribute building, body and writer wrapping and metric recording, about
// 15 µs of CPU per request, are skipped (design.md "Server spans").
func ServerSpans(next http.Handler, tp trace.TracerProvider, exporting bool) http.Handler {
	name := func(r *http.Request) string { return r.Method + " " + r.URL.Path }
	prop := propagation.TraceContext{}
	if exporting {
		return otelhttp.NewHandler(next, "gateway", otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(prop),
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return name(r) }))
	}
	tracer := tp.Tracer("github.com/mirobody/mirobody-go/gateway/internal/httpobs")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, name(r), trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// HeaderRequestID names the response header holding the request's trace
// id, for clients and proxies that do not read traceparent.
const HeaderRequestID = "X-Request-Id"

// TraceIDs gives every response the request's trace context: a W3C
// traceparent header naming the gateway's server span and X-Request-Id with
// its trace id, set before the handler runs so that errors, 304s and
// streams carry them too. The trace id also becomes the request id of the
// NATS requests made for it, so one id ties the client's view, every
// service's logs and the trace together. It runs inside ServerSpans, whose
// span is in the request's context (non-recording when nothing exports,
// but with its ids).
func TraceIDs(next http.Handler) http.Handler {
	prop := propagation.TraceContext{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sc := trace.SpanContextFromContext(r.Context())
		if sc.IsValid() {
			prop.Inject(r.Context(), propagation.HeaderCarrier(w.Header()))
			id := sc.TraceID().String()
			w.Header().Set(HeaderRequestID, id)
			r = r.WithContext(wire.WithRequestID(r.Context(), id))
		}
		next.ServeHTTP(w, r)
	})
}

// traceID is the trace id of r, for error bodies ("" without a span).
func TraceID(r *http.Request) string {
	if sc := trace.SpanContextFromContext(r.Context()); sc.IsValid() {
		return sc.TraceID().String()
	}
	return ""
}
