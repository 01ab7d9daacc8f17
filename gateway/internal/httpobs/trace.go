package httpobs

import (
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mirobody/mirobody-go/services/wire"
)

// HeaderRequestID names the response header holding the request's trace
// id, for clients and proxies that do not read traceparent.
const HeaderRequestID = "X-Request-Id"

// TraceIDs gives every response the request's trace context: a W3C
// traceparent header naming the gateway's server span and X-Request-Id with
// its trace id, set before the handler runs so that errors, 304s and
// streams carry them too. The trace id also becomes the request id of the
// NATS requests made for it, so one id ties the client's view, every
// service's logs and the trace together. It runs inside otelhttp, whose
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
