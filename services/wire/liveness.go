package wire

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
)

// DefaultLiveness is how long a caller waits without any sign of life from
// the replica handling its request before it counts the replica as gone.
const DefaultLiveness = 2 * time.Second

// LivePrefix is the first token of heartbeat subjects. A client's are its
// reply inbox with LivePrefix in place of _INBOX (_LIVE.<identity>.<id>.*),
// so that the per-identity inbox rule of the NATS permissions carries over:
// only the caller reads its heartbeats (services/natsx/design.md).
const LivePrefix = "_LIVE"

// Request headers of the liveness protocol (design.md, "Liveness").
const (
	// HeaderLiveness is the caller's liveness window in milliseconds; the
	// handler beats every third of it.
	HeaderLiveness = "Mirobody-Liveness"
	// HeaderHeartbeat is the subject the handler beats on.
	HeaderHeartbeat = "Mirobody-Heartbeat"
)

// minBeat bounds the heartbeat interval a request can ask for, so that a
// tiny window cannot make a server flood the broker.
const minBeat = 10 * time.Millisecond

// errLost is the cause of a try whose responder went silent.
var errLost = errors.New("the responder stopped sending heartbeats")

// ReasonLost is the details "reason" of the unavailable error a caller gets
// when the replica handling its request stopped responding: the request may
// or may not have run.
const ReasonLost = "responder_lost"

// IsLost reports whether err says the replica handling a request went away
// mid-request (so the request may or may not have run), also after the
// error crossed the wire.
func IsLost(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == Unavailable && e.Details["reason"] == ReasonLost
}

// lostError is what a caller gets for a request whose responder went away.
func lostError(subject string) *Error {
	return &Error{Code: Unavailable, Details: map[string]any{"reason": ReasonLost}, cause: errLost,
		Message: "the " + serviceOf(subject) + " service stopped responding while handling the request; it may or may not have run"}
}

// newWatcher returns the watcher of a client whose liveness window is window,
// at least three of the shortest beat intervals a server keeps: a shorter
// one would count every replica as gone.
func newWatcher(nc *nats.Conn, window time.Duration) *watcher {
	window = max(window, 3*minBeat)
	return &watcher{nc: nc, window: window, windowMS: strconv.FormatInt(window.Milliseconds(), 10)}
}

// watcher receives the heartbeats of a client's requests on one wildcard
// subscription and holds, per request in flight, the timer that fires when
// the beats stop.
type watcher struct {
	nc       *nats.Conn
	window   time.Duration
	windowMS string // the HeaderLiveness value

	mu     sync.Mutex
	sub    *nats.Subscription
	prefix string                 // <heartbeat subject prefix>.
	timers map[string]*time.Timer // token → the try's silence timer

	next atomic.Uint64
}

// watch starts watching one try: lost runs when no beat arrived for the
// window. It returns the heartbeat subject to send and a stop function.
func (w *watcher) watch(lost func()) (subject string, stop func(), err error) {
	prefix, err := w.subscribe()
	if err != nil {
		return "", nil, err
	}
	token := strconv.FormatUint(w.next.Add(1), 36)
	t := time.AfterFunc(w.window, lost)
	w.mu.Lock()
	w.timers[token] = t
	w.mu.Unlock()
	return prefix + token, func() {
		t.Stop()
		w.mu.Lock()
		delete(w.timers, token)
		w.mu.Unlock()
	}, nil
}

// subscribe subscribes to the client's heartbeat subjects on first use.
func (w *watcher) subscribe() (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sub != nil {
		return w.prefix, nil
	}
	prefix := LivePrefix + "." + nuid.Next()
	if rest, ok := strings.CutPrefix(w.nc.NewInbox(), "_INBOX."); ok {
		prefix = LivePrefix + "." + rest
	}
	prefix += "."
	sub, err := w.nc.Subscribe(prefix+"*", func(m *nats.Msg) {
		w.mu.Lock()
		t := w.timers[m.Subject[len(prefix):]]
		w.mu.Unlock()
		if t != nil {
			t.Reset(w.window)
		}
	})
	if err != nil {
		return "", err
	}
	w.sub, w.prefix, w.timers = sub, prefix, map[string]*time.Timer{}
	return prefix, nil
}

// request sends msg and waits for its reply, or until the responder has
// been silent for the window: then the error is errLost.
func (w *watcher) request(ctx context.Context, msg *nats.Msg) (*nats.Msg, error) {
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	subject, stop, err := w.watch(func() { cancel(errLost) })
	if err != nil {
		return nil, err
	}
	defer stop()
	msg.Header.Set(HeaderLiveness, w.windowMS)
	msg.Header.Set(HeaderHeartbeat, subject)
	reply, err := w.nc.RequestMsgWithContext(tctx, msg)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(tctx), errLost) {
		return nil, errLost
	}
	return reply, err
}

// heartbeat beats on a request's heartbeat subject while its handler runs.
type heartbeat struct {
	mu      sync.Mutex
	t       *time.Timer
	stopped bool
}

// startHeartbeat starts beating for a request whose headers ask for it,
// every third of its window; nil when they do not. The first beat comes
// after a third of the window, so a quick reply costs no beat at all.
//
// Beating stops for good once the connection has reconnected since the
// request arrived (a NATS node died, say): the permission to answer a
// request (allow_responses) lives in the server connection the request
// came through, so the reply would be refused, while beats (on _LIVE.>)
// would still keep the caller waiting until the handler ends. Falling
// silent lets the caller count the request lost within its window: an
// idempotent one moves to another replica, any other fails saying it may
// or may not have run.
func (s *Service) startHeartbeat(h nats.Header) *heartbeat {
	subject := h.Get(HeaderHeartbeat)
	if subject == "" || !strings.HasPrefix(subject, LivePrefix+".") {
		return nil
	}
	ms, err := strconv.ParseInt(h.Get(HeaderLiveness), 10, 64)
	if err != nil || ms <= 0 {
		return nil
	}
	every := max(time.Duration(ms)*time.Millisecond/3, minBeat)
	reconnects := s.nc.Stats().Reconnects
	hb := &heartbeat{}
	hb.mu.Lock()
	defer hb.mu.Unlock()
	hb.t = time.AfterFunc(every, func() {
		hb.mu.Lock()
		defer hb.mu.Unlock()
		if hb.stopped || s.nc.Stats().Reconnects != reconnects {
			return
		}
		// A failed publish (connection gone) needs no handling: the
		// silence is exactly what tells the caller.
		_ = s.nc.Publish(subject, nil)
		hb.t.Reset(every)
	})
	return hb
}

// stop ends the beats; the reply follows. Safe on nil.
func (hb *heartbeat) stop() {
	if hb == nil {
		return
	}
	hb.mu.Lock()
	defer hb.mu.Unlock()
	hb.stopped = true
	hb.t.Stop()
}
