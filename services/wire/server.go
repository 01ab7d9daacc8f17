package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// MaxHandlerTimeout bounds a request that arrives without a deadline header.
const MaxHandlerTimeout = 5 * time.Minute

// ServiceOptions configures a Service.
type ServiceOptions struct {
	// Name is the micro service name; it is also the queue group and the
	// first token of every subject. Required.
	Name string
	// Version is the service's SemVer version. Required.
	Version string
	// Description is shown by `nats micro info`.
	Description string
	// Log receives one line per failed request. Required.
	Log *slog.Logger
	// TracerProvider creates server spans; nil means no tracing.
	TracerProvider trace.TracerProvider
	// MaxConcurrent bounds the requests one endpoint handles at once; zero means 256.
	MaxConcurrent int
	// Metrics records every request; nil means none.
	Metrics *Metrics
	// Classify gives a handler error that is not an *Error its wire
	// error (a lost database connection is unavailable, not internal);
	// nil, or a nil result, means internal. The full error is logged.
	Classify func(error) *Error
}

// Service is a nats.go micro service whose endpoints are typed handlers.
// Handlers run concurrently (a plain micro endpoint handles one message at a
// time), and Stop waits for the ones in flight.
type Service struct {
	micro    micro.Service
	nc       *nats.Conn
	name     string
	version  string
	started  time.Time
	log      *slog.Logger
	tracer   trace.Tracer
	prop     propagation.TextMapPropagator
	maxConc  int
	metrics  *Metrics
	classify func(error) *Error
	stats    *endpointStats
	inFlight inFlight
	// stopped is closed by Stop, ending the idle handler goroutines.
	stopped  chan struct{}
	stopOnce sync.Once
}

// inFlight counts the handlers running. A sync.WaitGroup does not fit: a
// draining subscription still delivers the requests it holds, so a handler
// can start while Stop waits, and WaitGroup forbids an Add from zero
// concurrent with Wait (the race detector caught it).
type inFlight struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed while n is 0; nil means closed
}

func (f *inFlight) add() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		f.zero = make(chan struct{})
	}
	f.n++
}

func (f *inFlight) done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n--; f.n == 0 {
		close(f.zero)
	}
}

// idle is closed once no handler runs.
func (f *inFlight) idle() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	return f.zero
}

// PingResponse answers <service>.sys.ping.
type PingResponse struct {
	Service string    `json:"service"`
	Version string    `json:"version"`
	ID      string    `json:"id"`
	Time    time.Time `json:"time"`
}

// InfoResponse answers <service>.sys.info.
type InfoResponse struct {
	Service     string    `json:"service"`
	Version     string    `json:"version"`
	ID          string    `json:"id"`
	Description string    `json:"description"`
	Started     time.Time `json:"started"`
	Endpoints   []string  `json:"endpoints"`
}

// Empty is the request type of endpoints that take no arguments.
type Empty struct{}

// NewService registers a micro service on nc with the sys.ping and sys.info
// endpoints already in place.
func NewService(nc *nats.Conn, opts ServiceOptions) (*Service, error) {
	tp := opts.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 256
	}
	stats := newEndpointStats()
	ms, err := micro.AddService(nc, micro.Config{
		Name:        opts.Name,
		Version:     opts.Version,
		Description: opts.Description,
		QueueGroup:  opts.Name,
		// Handlers answer from their own goroutine, out of micro's sight:
		// only wire knows their errors and times (see the package doc).
		StatsHandler: stats.data,
	})
	if err != nil {
		return nil, fmt.Errorf("adding micro service %s: %w", opts.Name, err)
	}
	s := &Service{
		nc:       nc,
		micro:    ms,
		name:     opts.Name,
		version:  opts.Version,
		started:  time.Now().UTC(),
		log:      opts.Log.With("service", opts.Name),
		tracer:   tp.Tracer("github.com/mirobody/mirobody-go/services/wire"),
		prop:     propagation.TraceContext{},
		maxConc:  opts.MaxConcurrent,
		metrics:  opts.Metrics,
		classify: opts.Classify,
		stats:    stats,
		stopped:  make(chan struct{}),
	}
	if err := Serve(s, SysPing(s.name), s.ping); err != nil {
		return nil, err
	}
	if err := Serve(s, SysInfo(s.name), s.info); err != nil {
		return nil, err
	}
	return s, nil
}

// Name returns the service name.
func (s *Service) Name() string { return s.name }

// Micro returns the underlying micro service.
func (s *Service) Micro() micro.Service { return s.micro }

func (s *Service) ping(context.Context, *Empty) (*PingResponse, error) {
	return &PingResponse{Service: s.name, Version: s.version, ID: s.micro.Info().ID, Time: time.Now().UTC()}, nil
}

func (s *Service) info(context.Context, *Empty) (*InfoResponse, error) {
	inf := s.micro.Info()
	eps := make([]string, 0, len(inf.Endpoints))
	for _, e := range inf.Endpoints {
		eps = append(eps, e.Subject)
	}
	return &InfoResponse{Service: s.name, Version: s.version, ID: inf.ID, Description: inf.Description, Started: s.started, Endpoints: eps}, nil
}

// Stop stops taking requests (draining the subscriptions) and waits for the
// handlers in flight until ctx ends.
func (s *Service) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() { close(s.stopped) })
	if err := s.micro.Stop(); err != nil {
		return fmt.Errorf("stopping micro service %s: %w", s.name, err)
	}
	select {
	case <-s.inFlight.idle():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for %s handlers in flight: %w", s.name, ctx.Err())
	}
}

// Preencoded is implemented by a reply type that already holds its own JSON
// encoding, typically cached across requests: Serve sends those bytes as
// they are, skipping json.Marshal (which would also re-validate them). The
// bytes must be the valid JSON the caller decodes as its Resp type.
type Preencoded interface {
	PreencodedJSON() []byte
}

// Serve registers h as the handler of endpoint e, whose subject must be
// one of s's: <service>.<group…>.<verb>; the micro group and endpoint name
// come from the subject. Each request runs in its own goroutine with a
// context bounded by the caller's deadline and carrying its request id and
// trace context. A returned *Error reaches the caller as is; any other
// error is logged in full and reaches the caller only as internal.
func Serve[Req, Resp any](s *Service, e Endpoint[Req, Resp], h func(ctx context.Context, req *Req) (*Resp, error)) error {
	return addEndpoint(s, e.Subject, h)
}

// ServePreencoded is Serve for a handler whose reply is already encoded
// (see Preencoded), typically cached across requests. Its bytes must be the
// JSON of e's Resp: that is the one thing the compiler cannot check here.
func ServePreencoded[Req, Resp any, P Preencoded](s *Service, e Endpoint[Req, Resp], h func(ctx context.Context, req *Req) (P, error)) error {
	return addEndpoint(s, e.Subject, h)
}

// addEndpoint adds the endpoint subject, answered by h, to s.
func addEndpoint[Req, R any](s *Service, subject string, h func(context.Context, *Req) (R, error)) error {
	group, verb, ok := splitSubject(s.name, subject)
	if !ok {
		return fmt.Errorf("adding endpoint %s: the subject is not <%s>.<group>.<verb>", subject, s.name)
	}
	sem := make(chan struct{}, s.maxConc)
	pool := &workers{idle: make(chan func()), linger: workerLinger, quit: s.stopped}
	handler := micro.HandlerFunc(func(r micro.Request) {
		// Beating starts before the wait for a slot: a request queued
		// behind a full endpoint is alive, not lost.
		beat := s.startHeartbeat(nats.Header(r.Headers()))
		sem <- struct{}{} // backpressure: the subscription stops reading while full
		s.inFlight.add()
		pool.run(func() {
			defer func() { <-sem; s.inFlight.done() }()
			serve(s, r, h, beat)
		})
	})
	if err := s.micro.AddGroup(group).AddEndpoint(verb, handler); err != nil {
		return fmt.Errorf("adding endpoint %s: %w", subject, err)
	}
	// Make sure the server has the subscription before the caller goes on
	// to report ready: otherwise a request sent right after start can find
	// no responders. While disconnected, it is sent on reconnect anyway.
	if s.nc.IsConnected() {
		if err := s.nc.FlushTimeout(5 * time.Second); err != nil {
			return fmt.Errorf("confirming endpoint %s: %w", subject, err)
		}
	}
	return nil
}

// splitSubject cuts subject, one of service's, into its micro group
// (<service>.<group…>) and verb.
func splitSubject(service, subject string) (group, verb string, ok bool) {
	rest, ok := strings.CutPrefix(subject, service+".")
	i := strings.LastIndexByte(rest, '.')
	if !ok || i <= 0 || i == len(rest)-1 || strings.ContainsAny(subject, "*> ") {
		return "", "", false
	}
	return service + "." + rest[:i], rest[i+1:], true
}

func serve[Req, R any](s *Service, r micro.Request, h func(context.Context, *Req) (R, error), beat *heartbeat) {
	hdr := nats.Header(r.Headers())
	ctx := extract(context.Background(), s.prop, hdr)
	deadline, ok := deadlineOf(hdr)
	if !ok {
		deadline = time.Now().Add(MaxHandlerTimeout)
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	ctx, span := s.tracer.Start(ctx, r.Subject(), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("messaging.system", "nats"), attribute.String("messaging.destination.name", r.Subject())))
	defer span.End()

	start := time.Now()
	body, werr := handle(ctx, s, r, h)
	beat.stop()
	// Accounted before the reply leaves, so a caller that has its answer
	// finds it in the stats.
	s.observe(r.Subject(), werr, time.Since(start))
	if werr != nil {
		span.SetStatus(codes.Error, string(werr.Code))
		s.reply(ctx, r, werr)
		return
	}
	s.publish(ctx, r, &nats.Msg{Data: body})
}

// handle runs h on r and returns the encoded reply, or the error to answer.
func handle[Req, R any](ctx context.Context, s *Service, r micro.Request, h func(context.Context, *Req) (R, error)) ([]byte, *Error) {
	resp, err := invoke(ctx, r, h)
	if err != nil {
		return nil, s.toWire(ctx, r.Subject(), err)
	}
	if pre, ok := any(resp).(Preencoded); ok {
		return pre.PreencodedJSON(), nil
	}
	body, err := json.Marshal(resp)
	if err != nil {
		s.log.ErrorContext(ctx, "encoding reply failed", "subject", r.Subject(), "request_id", RequestID(ctx), "err", err)
		return nil, &Error{Code: Internal, Message: errInternal.Error()}
	}
	return body, nil
}

// reply sends werr as an error reply, with micro's error headers so that
// `nats micro` tools and other micro clients read it too.
func (s *Service) reply(ctx context.Context, r micro.Request, werr *Error) {
	body, _ := json.Marshal(werr)
	msg := &nats.Msg{Data: body, Header: nats.Header{}}
	msg.Header.Set(HeaderErrorCode, string(werr.Code))
	msg.Header.Set("Nats-Service-Error", werr.Message)
	s.publish(ctx, r, msg)
}

// publish sends a reply on the connection itself rather than through
// micro.Request: micro reads its request's state after the handler
// returns, and our handlers answer later, from their own goroutine.
func (s *Service) publish(ctx context.Context, r micro.Request, msg *nats.Msg) {
	if r.Reply() == "" {
		return // a publish, not a request: nobody waits for an answer
	}
	msg.Subject = r.Reply()
	limit := s.nc.MaxPayload()
	over := limit > 0 && int64(len(msg.Data)) > limit
	var err error
	if !over {
		err = s.nc.PublishMsg(msg)
		// NATS's own check counts the headers too; it also runs before
		// anything is sent.
		over = errors.Is(err, nats.ErrMaxPayload)
	}
	if over && msg.Header.Get(HeaderErrorCode) == "" {
		// A reply NATS refuses would leave the caller waiting for its
		// deadline: it gets the reason instead, at once.
		s.log.WarnContext(ctx, "reply is over the NATS max payload", "subject", r.Subject(), "bytes", len(msg.Data), "limit_bytes", limit)
		s.reply(ctx, r, TooLarge("reply", int64(len(msg.Data)), limit))
		return
	}
	if over {
		err = nats.ErrMaxPayload
	}
	if err != nil {
		s.log.WarnContext(ctx, "sending reply failed", "subject", r.Subject(), "err", err)
	}
}

func invoke[Req, R any](ctx context.Context, r micro.Request, h func(context.Context, *Req) (R, error)) (resp R, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panic: %v\n%s", p, debug.Stack())
		}
	}()
	var req Req
	if data := r.Data(); len(data) > 0 {
		if err := json.Unmarshal(data, &req); err != nil {
			return resp, Errorf(InvalidArgument, "decoding request: %v", err)
		}
	}
	return h(ctx, &req)
}

// toWire keeps *Error values and hides everything else behind internal,
// after logging it in full.
func (s *Service) toWire(ctx context.Context, subject string, err error) *Error {
	var werr *Error
	if errors.As(err, &werr) && werr.Code.Valid() {
		return werr
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Code: DeadlineExceeded, Message: "deadline exceeded while handling " + subject}
	}
	if s.classify != nil {
		if werr := s.classify(err); werr != nil {
			s.log.WarnContext(ctx, "request failed", "subject", subject, "request_id", RequestID(ctx), "code", werr.Code, "err", err)
			return werr
		}
	}
	s.log.ErrorContext(ctx, "request failed", "subject", subject, "request_id", RequestID(ctx), "err", err)
	return &Error{Code: Internal, Message: fmt.Sprintf("%s (request id %s)", errInternal, RequestID(ctx))}
}
