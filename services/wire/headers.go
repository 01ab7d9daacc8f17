package wire

import (
	"context"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
)

// Header names carried by every request.
const (
	// HeaderRequestID carries the id that ties the logs of one request together.
	HeaderRequestID = "Mirobody-Request-Id"
	// HeaderDeadline carries the caller's deadline as Unix milliseconds.
	HeaderDeadline = "Mirobody-Deadline"
	// HeaderErrorCode is set on error replies (micro's own error header).
	HeaderErrorCode = "Nats-Service-Error-Code"
)

type requestIDKey struct{}

// WithRequestID returns a context that carries the request id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns the request id carried by ctx, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// NewRequestID returns a fresh random request id.
func NewRequestID() string { return uuid.NewString() }

func setDeadline(h nats.Header, deadline time.Time) {
	h.Set(HeaderDeadline, strconv.FormatInt(deadline.UnixMilli(), 10))
}

// deadlineOf parses the deadline header; ok is false when it is absent or bad.
func deadlineOf(h nats.Header) (time.Time, bool) {
	v := h.Get(HeaderDeadline)
	if v == "" {
		return time.Time{}, false
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

// HeaderCarrier adapts nats.Header to OpenTelemetry's TextMapCarrier, so that
// W3C trace context travels in NATS headers.
type HeaderCarrier nats.Header

// Get returns the first value for key.
func (c HeaderCarrier) Get(key string) string { return nats.Header(c).Get(key) }

// Set replaces the values for key.
func (c HeaderCarrier) Set(key, value string) { nats.Header(c).Set(key, value) }

// Keys lists the header names.
func (c HeaderCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
