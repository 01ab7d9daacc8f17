// Package httpobs is the gateway's HTTP observability: per-route request
// metrics and the trace id every response carries.
package httpobs

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mirobody/mirobody-go/services/telemetry"
)

// Metrics counts and times HTTP requests by route template (echo's
// "/api/sessions/:id", never the raw path), method and status class, so the
// label values stay a small fixed set whatever clients send (design.md).
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// UnmatchedRoute labels requests that reached no route: unknown paths, and
// requests refused before routing (an invalid token, the per-IP budget).
const UnmatchedRoute = "unmatched"

func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	requests, err := telemetry.RegisterOnce(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mirobody_http_requests_total",
		Help: "HTTP requests served by the gateway, by route template, method and status class.",
	}, []string{"route", "method", "status"}))
	if err != nil {
		return nil, fmt.Errorf("registering the HTTP metrics: %w", err)
	}
	duration, err := telemetry.RegisterOnce(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mirobody_http_request_duration_seconds",
		Help:    "Time to serve an HTTP request (streams: until they end), by route template and method.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
	}, []string{"route", "method"}))
	if err != nil {
		return nil, fmt.Errorf("registering the HTTP metrics: %w", err)
	}
	return &Metrics{requests: requests, duration: duration}, nil
}

// routeKey is the context key of a request's *routeHolder.
type routeKey struct{}

// routeHolder receives the route template once a router has matched it.
type routeHolder struct{ route string }

// SetRoute records the matched route of the request ctx belongs to.
func SetRoute(ctx context.Context, route string) {
	if h, ok := ctx.Value(routeKey{}).(*routeHolder); ok {
		h.route = route
	}
}

// EchoRoute is echo middleware (after routing) that tells the metrics the
// route template.
func EchoRoute(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		SetRoute(c.Request().Context(), c.Path())
		return next(c)
	}
}

// wrap measures every request next serves.
func (m *Metrics) Wrap(next http.Handler) http.Handler {
	if m == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		h := &routeHolder{}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), routeKey{}, h)))
		route := h.route
		if route == "" {
			route = UnmatchedRoute
		}
		method := methodLabel(r.Method)
		m.requests.WithLabelValues(route, method, statusClass(sw.status)).Inc()
		m.duration.WithLabelValues(route, method).Observe(time.Since(start).Seconds())
	})
}

// methodLabel bounds the method label to the standard methods.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

// statusClass is "2xx" for 200..299 and so on; 0 (nothing written) is 200.
func statusClass(code int) string {
	if code == 0 {
		code = http.StatusOK
	}
	return strconv.Itoa(code/100) + "xx"
}

// statusWriter remembers the status a handler wrote. Unwrap keeps
// http.ResponseController (flush, deadlines) working through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush implements http.Flusher for code that asserts it directly.
func (w *statusWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// Unwrap returns the underlying writer, for http.ResponseController.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
