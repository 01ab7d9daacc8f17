package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// DefaultTimeout bounds a call whose context has no deadline, so that no
// request can hang forever on a silent responder.
const DefaultTimeout = 30 * time.Second

// ClientOptions configures a Client.
type ClientOptions struct {
	// Conn is the NATS connection requests travel on. Required.
	Conn *nats.Conn
	// TracerProvider creates client spans; nil means no tracing.
	TracerProvider trace.TracerProvider
	// DefaultTimeout applies when the context has no deadline; zero means DefaultTimeout.
	DefaultTimeout time.Duration
	// Liveness is how long a request's handler may stay silent before the
	// caller counts its replica as gone (it beats every third of it):
	// an idempotent request is then sent again, another one fails with
	// unavailable. Zero means DefaultLiveness; negative turns liveness off
	// (the call then waits for its deadline, as plain NATS requests do).
	Liveness time.Duration
}

// Client sends typed requests and events over one NATS connection.
type Client struct {
	nc      *nats.Conn
	tracer  trace.Tracer
	prop    propagation.TextMapPropagator
	timeout time.Duration
	// live watches heartbeats; nil when liveness is off.
	live *watcher
}

// NewClient returns a Client for opts.
func NewClient(opts ClientOptions) *Client {
	tp := opts.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	timeout := opts.DefaultTimeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	c := &Client{
		nc:      opts.Conn,
		tracer:  tp.Tracer("github.com/mirobody/mirobody-go/services/wire"),
		prop:    propagation.TraceContext{},
		timeout: timeout,
	}
	switch {
	case opts.Liveness == 0:
		c.live = newWatcher(opts.Conn, DefaultLiveness)
	case opts.Liveness > 0:
		c.live = newWatcher(opts.Conn, opts.Liveness)
	}
	return c
}

// Conn returns the underlying NATS connection.
func (c *Client) Conn() *nats.Conn { return c.nc }

// call sends req to subject and decodes the reply into resp. A try whose
// responder goes silent is sent again when idempotent (NATS picks a replica
// again, and the dead one's subscription is gone), else it fails with
// unavailable, saying the request may or may not have run.
func (c *Client) call(ctx context.Context, subject string, idempotent bool, req, resp any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	ctx, span := c.tracer.Start(ctx, subject, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("messaging.system", "nats"), attribute.String("messaging.destination.name", subject)))
	defer span.End()

	body, err := json.Marshal(req)
	if err != nil {
		return fail(span, &Error{Code: InvalidArgument, Message: fmt.Sprintf("encoding request for %s: %v", subject, err), cause: err})
	}
	// Over the server's max payload, NATS would refuse the publish anyway:
	// saying so at once, as too_large, beats an opaque failure.
	if werr := c.checkSize("request", body); werr != nil {
		return fail(span, werr)
	}
	msg := nats.NewMsg(subject)
	msg.Data = body
	c.injectHeaders(ctx, msg.Header)

	reply, err := c.request(ctx, msg)
	for errors.Is(err, errLost) && idempotent {
		span.AddEvent("responder lost; trying again")
		reply, err = c.request(ctx, msg)
	}
	if errors.Is(err, errLost) {
		return fail(span, lostError(subject))
	}
	if errors.Is(err, nats.ErrMaxPayload) {
		// The body fitted, the body plus headers did not.
		return fail(span, TooLarge("request", int64(len(body)), c.nc.MaxPayload()))
	}
	if err != nil {
		return fail(span, fromTransport(subject, err))
	}
	if werr := errorFromMsg(reply); werr != nil {
		return fail(span, werr)
	}
	if resp != nil && len(reply.Data) > 0 {
		if err := json.Unmarshal(reply.Data, resp); err != nil {
			return fail(span, &Error{Code: Internal, Message: fmt.Sprintf("decoding a reply from the %s service: %v", serviceOf(subject), err), cause: err})
		}
	}
	return nil
}

// request makes one try, watching the responder's heartbeats when liveness
// is on.
func (c *Client) request(ctx context.Context, msg *nats.Msg) (*nats.Msg, error) {
	if c.live == nil {
		return c.nc.RequestMsgWithContext(ctx, msg)
	}
	return c.live.request(ctx, msg)
}

func fail(span trace.Span, err *Error) error {
	span.SetStatus(codes.Error, string(err.Code))
	span.SetAttributes(attribute.String("mirobody.error_code", string(err.Code)))
	return err
}

func (c *Client) injectHeaders(ctx context.Context, h nats.Header) {
	if dl, ok := ctx.Deadline(); ok {
		setDeadline(h, dl)
	}
	id := RequestID(ctx)
	if id == "" {
		id = NewRequestID()
	}
	h.Set(HeaderRequestID, id)
	c.prop.Inject(ctx, HeaderCarrier(h))
}

// Publish sends v as a JSON event on subject, with the request id and trace
// context in its headers. Events get no reply.
func (c *Client) Publish(ctx context.Context, subject string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding event for %s: %w", subject, err)
	}
	if werr := c.checkSize("event", body); werr != nil {
		return fmt.Errorf("publishing %s: %w", subject, werr)
	}
	msg := nats.NewMsg(subject)
	msg.Data = body
	c.injectHeaders(ctx, msg.Header)
	if err := c.nc.PublishMsg(msg); errors.Is(err, nats.ErrMaxPayload) {
		return fmt.Errorf("publishing %s: %w", subject, TooLarge("event", int64(len(body)), c.nc.MaxPayload()))
	} else if err != nil {
		return fmt.Errorf("publishing %s: %w", subject, err)
	}
	return nil
}

// MaxPayload is the largest message the connection's server accepts, or 0
// while that is not known yet (not connected).
func (c *Client) MaxPayload() int64 { return c.nc.MaxPayload() }

// checkSize returns the too_large error for a body over the max payload.
func (c *Client) checkSize(what string, body []byte) *Error {
	if limit := c.nc.MaxPayload(); limit > 0 && int64(len(body)) > limit {
		return TooLarge(what, int64(len(body)), limit)
	}
	return nil
}

// errorFromMsg returns the *Error carried by an error reply, or nil when msg
// is a successful reply.
func errorFromMsg(msg *nats.Msg) *Error {
	if msg.Header == nil {
		return nil
	}
	code := msg.Header.Get(HeaderErrorCode)
	if code == "" {
		return nil
	}
	var e Error
	if err := json.Unmarshal(msg.Data, &e); err != nil || !e.Code.Valid() {
		// A reply from something other than our handler adapter (for example
		// a micro internal error): keep its text, but only as internal.
		return &Error{Code: Internal, Message: msg.Header.Get("Nats-Service-Error")}
	}
	return &e
}

func extract(ctx context.Context, prop propagation.TextMapPropagator, h nats.Header) context.Context {
	if h == nil {
		return ctx
	}
	if id := h.Get(HeaderRequestID); id != "" {
		ctx = WithRequestID(ctx, id)
	}
	return prop.Extract(ctx, HeaderCarrier(h))
}

// errInternal is what callers see in place of an unexpected error.
var errInternal = errors.New("internal error")
