package wire_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/wire"
)

type whoReq struct {
	SleepMS int `json:"sleep_ms,omitempty"`
}

type whoResp struct {
	Replica string `json:"replica"`
}

// Two endpoints with the same handler, one declared idempotent.
var (
	whoRead  = wire.Endpoint[whoReq, whoResp]{Subject: "live.test.read", Idempotent: true}
	whoWrite = wire.Endpoint[whoReq, whoResp]{Subject: "live.test.write"}
)

// cluster is replicas of the "live" service. The first request any of them
// receives blocks (it is the one whose replica the test kills); the others
// answer with their replica's name after SleepMS.
type cluster struct {
	url     string
	first   atomic.Bool
	started chan string // the replica that took the blocking request
	release chan struct{}
}

func newCluster(t *testing.T) *cluster {
	c := &cluster{url: servicetest.NATS(t), started: make(chan string, 1), release: make(chan struct{})}
	return c
}

// replica starts one replica on its own connection and returns that
// connection: closing it is the replica dying (kill -9 as NATS sees it:
// its subscriptions go, nothing it sends arrives).
func (c *cluster) replica(t *testing.T, name string) *nats.Conn {
	t.Helper()
	nc := servicetest.Conn(t, c.url)
	s, err := wire.NewService(nc, wire.ServiceOptions{Name: "live", Version: "0.1.0", Log: servicetest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	handler := func(ctx context.Context, req *whoReq) (*whoResp, error) {
		if c.first.CompareAndSwap(false, true) {
			c.started <- name
			select {
			case <-c.release:
			case <-ctx.Done():
			}
			return &whoResp{Replica: name}, nil
		}
		select {
		case <-time.After(time.Duration(req.SleepMS) * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &whoResp{Replica: name}, nil
	}
	for _, ep := range []wire.Endpoint[whoReq, whoResp]{whoRead, whoWrite} {
		if err := wire.Serve(s, ep, handler); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(c.stop)
	return nc
}

func (c *cluster) stop() {
	select {
	case <-c.release:
	default:
		close(c.release)
	}
}

// TestReplicaDiesMidRequest: the replica handling a request dies. An
// idempotent request is answered by the other replica, a non-idempotent
// one fails with unavailable (may or may not have run); both within about
// the liveness window, where a plain request waited for its whole 30 s
// deadline.
func TestReplicaDiesMidRequest(t *testing.T) {
	tests := []struct {
		name       string
		ep         wire.Endpoint[whoReq, whoResp]
		wantAnswer bool
	}{
		{"idempotent is retried on the other replica", whoRead, true},
		{"not idempotent fails fast", whoWrite, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t)
			conns := map[string]*nats.Conn{"a": c.replica(t, "a"), "b": c.replica(t, "b")}
			client := servicetest.Client(t, c.url)
			type result struct {
				resp *whoResp
				err  error
			}
			done := make(chan result, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				resp, err := tt.ep.Call(ctx, client, &whoReq{})
				done <- result{resp, err}
			}()
			victim := <-c.started
			killed := time.Now()
			conns[victim].Close()
			r := <-done
			took := time.Since(killed)
			if took > 3*time.Second {
				t.Errorf("the caller learned after %s, want < 3s", took)
			}
			if tt.wantAnswer {
				if r.err != nil || r.resp.Replica == victim {
					t.Fatalf("got %+v, %v: want the answer of the replica that is not %s", r.resp, r.err, victim)
				}
				return
			}
			if !wire.IsLost(r.err) || wire.CodeOf(r.err) != wire.Unavailable {
				t.Fatalf("err = %v, want unavailable, responder lost", r.err)
			}
			if msg := r.err.Error(); !contains(msg, "may or may not have run") || !contains(msg, "live service") {
				t.Errorf("message %q: want the service and that it may or may not have run", msg)
			}
		})
	}
}

// TestLongHandlerIsNotCut: a handler that runs for many liveness windows
// beats, and its caller waits for the answer.
func TestLongHandlerIsNotCut(t *testing.T) {
	c := newCluster(t)
	c.first.Store(true) // no request blocks
	c.replica(t, "a")
	// Wide enough that a loaded CI machine does not delay a beat past it.
	window := 500 * time.Millisecond
	client := wire.NewClient(wire.ClientOptions{Conn: servicetest.Conn(t, c.url), Liveness: window})
	for _, ep := range []wire.Endpoint[whoReq, whoResp]{whoRead, whoWrite} {
		t0 := time.Now()
		resp, err := ep.Call(context.Background(), client, &whoReq{SleepMS: int(4 * window / time.Millisecond)})
		if err != nil || resp.Replica != "a" {
			t.Fatalf("%s: got %+v, %v", ep.Subject, resp, err)
		}
		if took := time.Since(t0); took < 4*window {
			t.Errorf("%s: answered after %s, before the handler's %s", ep.Subject, took, 4*window)
		}
	}
}

// TestSilentResponder: something took the request and never beats nor
// answers (a hung process, a peer without liveness): the caller learns
// within the window instead of its deadline.
func TestSilentResponder(t *testing.T) {
	url := servicetest.NATS(t)
	nc := servicetest.Conn(t, url)
	if _, err := nc.QueueSubscribe(whoWrite.Subject, "live", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	client := servicetest.Client(t, url)
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := whoWrite.Call(ctx, client, &whoReq{})
	took := time.Since(t0)
	if !wire.IsLost(err) {
		t.Fatalf("err = %v, want unavailable, responder lost", err)
	}
	if took < wire.DefaultLiveness || took > 3*time.Second {
		t.Errorf("took %s, want about the liveness window %s", took, wire.DefaultLiveness)
	}
}

// TestLivenessOff: a client without liveness waits for the deadline, as a
// plain NATS request does, and sends no liveness headers.
func TestLivenessOff(t *testing.T) {
	url := servicetest.NATS(t)
	nc := servicetest.Conn(t, url)
	headers := make(chan nats.Header, 1)
	if _, err := nc.Subscribe(whoWrite.Subject, func(m *nats.Msg) { headers <- m.Header }); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	client := wire.NewClient(wire.ClientOptions{Conn: servicetest.Conn(t, url), Liveness: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := whoWrite.Call(ctx, client, &whoReq{}); wire.CodeOf(err) != wire.DeadlineExceeded {
		t.Fatalf("err = %v, want deadline_exceeded", err)
	}
	if h := <-headers; h.Get(wire.HeaderHeartbeat) != "" || h.Get(wire.HeaderLiveness) != "" {
		t.Errorf("liveness headers sent with liveness off: %v", h)
	}
}

// TestBeatsOnlyOnSlowCalls: a reply within a third of the window costs no
// heartbeat; a handler that runs longer beats about every third.
func TestBeatsOnlyOnSlowCalls(t *testing.T) {
	c := newCluster(t)
	c.first.Store(true) // no request blocks
	c.replica(t, "a")
	window := 600 * time.Millisecond
	client := wire.NewClient(wire.ClientOptions{Conn: servicetest.Conn(t, c.url), Liveness: window})
	var beats atomic.Int32
	spy := servicetest.Conn(t, c.url)
	if _, err := spy.Subscribe(wire.LivePrefix+".>", func(*nats.Msg) { beats.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		if _, err := whoWrite.Call(context.Background(), client, &whoReq{}); err != nil {
			t.Fatal(err)
		}
	}
	// A slow call after the quick ones: its beats also show that the spy
	// sees beats at all, and the quick calls' would have arrived first.
	if _, err := whoWrite.Call(context.Background(), client, &whoReq{SleepMS: int(3 * window / time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	// 3 windows beat about 8 times; quick calls would add up to 50.
	if n := beats.Load(); n < 4 || n > 11 {
		t.Errorf("%d beats: want about 8, from the slow call alone", n)
	}
}

// TestReconnectEndsBeats: the replica handling a request loses its NATS
// server and reconnects to another while the handler runs. Its answer
// would be refused there (the permission to answer lives in the old
// server's connection), so it stops beating: the caller counts the
// request lost within the window instead of waiting for the handler.
func TestReconnectEndsBeats(t *testing.T) {
	c := newCluster(t)
	proxy := servicetest.NewProxy(t, strings.TrimPrefix(c.url, "nats://"))
	// The replica reaches the server through the proxy first, then directly.
	nc, err := nats.Connect(proxy.URL()+","+c.url, nats.DontRandomize(), nats.MaxReconnects(-1), nats.ReconnectWait(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	s, err := wire.NewService(nc, wire.ServiceOptions{Name: "live", Version: "0.1.0", Log: servicetest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	t.Cleanup(c.stop)
	started := make(chan struct{})
	if err := wire.Serve(s, whoWrite, func(ctx context.Context, _ *whoReq) (*whoResp, error) {
		close(started)
		select {
		case <-c.release:
		case <-ctx.Done():
		}
		return &whoResp{Replica: "a"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	window := 500 * time.Millisecond
	client := wire.NewClient(wire.ClientOptions{Conn: servicetest.Conn(t, c.url), Liveness: window})
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := whoWrite.Call(ctx, client, &whoReq{})
		done <- err
	}()
	<-started
	cut := time.Now()
	proxy.Kill()
	select {
	case err := <-done:
		if !wire.IsLost(err) {
			t.Fatalf("err = %v, want unavailable, responder lost", err)
		}
		if took := time.Since(cut); took > 3*time.Second {
			t.Errorf("the caller learned after %s, want about the window %s", took, window)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the caller still waits 10 s after its replica reconnected: the beats went on")
	}
}
