package wire_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/wire"
)

type echoReq struct {
	Text  string `json:"text"`
	Fail  string `json:"fail,omitempty"`
	Sleep int    `json:"sleep_ms,omitempty"`
	// Repeat, when set, makes the reply's text that many copies of Text.
	Repeat int `json:"repeat,omitempty"`
}

// echo is the test service's endpoint.
var echo = wire.Endpoint[echoReq, echoResp]{Subject: "echo.test.echo"}

type echoResp struct {
	Text        string `json:"text"`
	RequestID   string `json:"request_id"`
	HasDeadline bool   `json:"has_deadline"`
}

func startEcho(t testing.TB, url string, started chan<- struct{}, release <-chan struct{}) *wire.Service {
	t.Helper()
	nc := servicetest.Conn(t, url)
	s, err := wire.NewService(nc, wire.ServiceOptions{Name: "echo", Version: "0.1.0", Log: servicetest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	err = wire.Serve(s, echo, func(ctx context.Context, req *echoReq) (*echoResp, error) {
		switch req.Fail {
		case "not_found":
			return nil, wire.Errorf(wire.NotFound, "no such thing %q", req.Text)
		case "secret":
			return nil, errors.New("pq: password=hunter2 leaked")
		case "panic":
			panic("boom")
		case "block":
			started <- struct{}{}
			<-release
		}
		if req.Sleep > 0 {
			select {
			case <-time.After(time.Duration(req.Sleep) * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		_, ok := ctx.Deadline()
		if req.Repeat > 0 {
			req.Text = strings.Repeat(req.Text, req.Repeat)
		}
		return &echoResp{Text: req.Text, RequestID: wire.RequestID(ctx), HasDeadline: ok}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCall(t *testing.T) {
	url := servicetest.NATS(t)
	startEcho(t, url, nil, nil)
	c := servicetest.Client(t, url)

	tests := []struct {
		name     string
		req      echoReq
		timeout  time.Duration
		wantCode wire.Code
		check    func(t *testing.T, resp *echoResp, err error)
	}{
		{name: "ok", req: echoReq{Text: "hi"}, check: func(t *testing.T, r *echoResp, _ error) {
			if r.Text != "hi" || r.RequestID == "" || !r.HasDeadline {
				t.Errorf("reply %+v: want text, request id and deadline", r)
			}
		}},
		{name: "typed error", req: echoReq{Text: "x", Fail: "not_found"}, wantCode: wire.NotFound, check: func(t *testing.T, _ *echoResp, err error) {
			if !errors.Is(err, &wire.Error{Code: wire.NotFound}) {
				t.Errorf("errors.Is by code failed for %v", err)
			}
		}},
		{name: "unexpected error is hidden", req: echoReq{Fail: "secret"}, wantCode: wire.Internal, check: func(t *testing.T, _ *echoResp, err error) {
			if e := err.Error(); contains(e, "hunter2") {
				t.Errorf("internal detail leaked: %s", e)
			}
		}},
		{name: "panic is internal", req: echoReq{Fail: "panic"}, wantCode: wire.Internal},
		{name: "timeout", req: echoReq{Sleep: 2000}, timeout: 100 * time.Millisecond, wantCode: wire.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			resp, err := echo.Call(ctx, c, &tt.req)
			if got := wire.CodeOf(err); got != tt.wantCode {
				t.Fatalf("code = %q, want %q (err %v)", got, tt.wantCode, err)
			}
			if tt.check != nil {
				tt.check(t, resp, err)
			}
		})
	}
}

func TestNoRespondersIsUnavailable(t *testing.T) {
	url := servicetest.NATS(t)
	c := servicetest.Client(t, url)
	t0 := time.Now()
	_, err := wire.SysPing("nobody").Call(context.Background(), c, &wire.Empty{})
	if wire.CodeOf(err) != wire.Unavailable {
		t.Fatalf("code = %q, want unavailable (%v)", wire.CodeOf(err), err)
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("no responders took %s, want prompt", d)
	}
	if strings.Contains(err.Error(), "nobody.sys.ping") || !strings.Contains(err.Error(), "nobody service") {
		t.Errorf("message %q: want the service named, not the subject", err)
	}
}

// TestTooLarge: a request or a reply over the NATS max payload fails at
// once with resource_exhausted too_large and the limit, instead of an
// internal error (request) or the caller's timeout (reply).
func TestTooLarge(t *testing.T) {
	url := servicetest.NATS(t)
	startEcho(t, url, nil, nil)
	c := servicetest.Client(t, url)
	limit := c.MaxPayload()
	if limit <= 0 {
		t.Fatalf("max payload %d", limit)
	}
	tests := []struct {
		name string
		req  echoReq
		what string
	}{
		{"request", echoReq{Text: strings.Repeat("x", int(limit))}, "request too large"},
		{"reply", echoReq{Text: "0123456789", Repeat: int(limit / 10)}, "reply too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Now()
			_, err := echo.Call(context.Background(), c, &tt.req)
			if d := time.Since(t0); d > 5*time.Second {
				t.Errorf("took %s, want at once", d)
			}
			var werr *wire.Error
			if !errors.As(err, &werr) || werr.Code != wire.ResourceExhausted || !wire.IsTooLarge(err) {
				t.Fatalf("err = %#v, want resource_exhausted too_large", err)
			}
			if !strings.Contains(werr.Message, tt.what) || !strings.Contains(werr.Message, fmt.Sprint(limit)) || strings.Contains(werr.Message, "echo.test") {
				t.Errorf("message %q: want %q and the limit %d, no subject", werr.Message, tt.what, limit)
			}
			if got, _ := werr.Details["limit_bytes"].(float64); werr.Details["reason"] != wire.ReasonTooLarge || (got != float64(limit) && werr.Details["limit_bytes"] != limit) {
				t.Errorf("details %v", werr.Details)
			}
		})
	}
	// An event over the limit is refused too, before it is sent.
	if err := c.Publish(context.Background(), "echo.events", strings.Repeat("y", int(limit))); !wire.IsTooLarge(err) {
		t.Errorf("publish: %v, want too_large", err)
	}
	// The service still answers.
	if _, err := echo.Call(context.Background(), c, &echoReq{Text: "ok"}); err != nil {
		t.Fatal(err)
	}
}

func TestPingInfo(t *testing.T) {
	url := servicetest.NATS(t)
	startEcho(t, url, nil, nil)
	c := servicetest.Client(t, url)
	p, err := wire.SysPing("echo").Call(context.Background(), c, &wire.Empty{})
	if err != nil || p.Service != "echo" || p.Version != "0.1.0" {
		t.Fatalf("ping = %+v, %v", p, err)
	}
	inf, err := wire.SysInfo("echo").Call(context.Background(), c, &wire.Empty{})
	if err != nil || len(inf.Endpoints) != 3 {
		t.Fatalf("info = %+v, %v", inf, err)
	}
}

// Handlers run concurrently, and Stop waits for the one in flight.
func TestConcurrencyAndDrain(t *testing.T) {
	url := servicetest.NATS(t)
	started, release := make(chan struct{}), make(chan struct{})
	s := startEcho(t, url, started, release)
	c := servicetest.Client(t, url)
	var wg sync.WaitGroup
	wg.Add(1)
	var blockedErr error
	go func() {
		defer wg.Done()
		_, blockedErr = echo.Call(context.Background(), c, &echoReq{Fail: "block"})
	}()
	<-started
	// A second request is served while the first is blocked.
	if _, err := echo.Call(context.Background(), c, &echoReq{Text: "b"}); err != nil {
		t.Fatalf("concurrent call: %v", err)
	}
	stopped := make(chan error)
	go func() { stopped <- s.Stop(context.Background()) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while a handler was in flight")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatalf("stop: %v", err)
	}
	wg.Wait()
	if blockedErr != nil {
		t.Fatalf("in-flight call failed across drain: %v", blockedErr)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// cachedReply is a reply that holds its own encoding.
type cachedReply struct{ body []byte }

func (c *cachedReply) PreencodedJSON() []byte { return c.body }

func TestPreencodedReply(t *testing.T) {
	url := servicetest.NATS(t)
	s, err := wire.NewService(servicetest.Conn(t, url), wire.ServiceOptions{Name: "pre", Version: "0.1.0", Log: servicetest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	preGet := wire.Endpoint[wire.Empty, echoResp]{Subject: "pre.test.get"}
	reply := &cachedReply{body: []byte(`{"text":"from cache","request_id":"r1"}`)}
	if err := wire.ServePreencoded(s, preGet, func(context.Context, *wire.Empty) (*cachedReply, error) { return reply, nil }); err != nil {
		t.Fatal(err)
	}
	got, err := preGet.Call(context.Background(), servicetest.Client(t, url), &wire.Empty{})
	if err != nil || got.Text != "from cache" || got.RequestID != "r1" {
		t.Fatalf("got %+v, %v", got, err)
	}
}

// Regression: error replies were sent through micro.Request from the
// handler goroutine while micro read the same request after dispatch, a
// data race that -race caught in CI. Many concurrent error replies make it
// show up again if replies ever go back through micro.Request.
func TestConcurrentErrorReplies(t *testing.T) {
	url := servicetest.NATS(t)
	startEcho(t, url, nil, nil)
	c := servicetest.Client(t, url)
	var wg sync.WaitGroup
	for i := 0; i < 1000; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := echo.Call(context.Background(), c, &echoReq{Fail: "not_found"})
			if wire.CodeOf(err) != wire.NotFound {
				t.Errorf("code = %q, want not_found", wire.CodeOf(err))
			}
		}()
	}
	wg.Wait()
}

// A handler error that is not an *Error is internal, unless the service's
// Classify names its code (a lost database connection is unavailable).
func TestClassify(t *testing.T) {
	url := servicetest.NATS(t)
	lost := errors.New("connection lost")
	s, err := wire.NewService(servicetest.Conn(t, url), wire.ServiceOptions{Name: "cls", Version: "0.1.0", Log: servicetest.Logger(t),
		Classify: func(err error) *wire.Error {
			if errors.Is(err, lost) {
				return wire.Errorf(wire.Unavailable, "the database is unavailable")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	for verb, herr := range map[string]error{"lost": fmt.Errorf("reading: %w", lost), "bug": errors.New("nil map")} {
		ep := wire.Endpoint[wire.Empty, wire.Empty]{Subject: "cls.test." + verb}
		if err := wire.Serve(s, ep, func(context.Context, *wire.Empty) (*wire.Empty, error) { return nil, herr }); err != nil {
			t.Fatal(err)
		}
	}
	c := servicetest.Client(t, url)
	for verb, want := range map[string]wire.Code{"lost": wire.Unavailable, "bug": wire.Internal} {
		ep := wire.Endpoint[wire.Empty, wire.Empty]{Subject: "cls.test." + verb}
		_, err := ep.Call(context.Background(), c, &wire.Empty{})
		if got := wire.CodeOf(err); got != want {
			t.Errorf("%s: %v, want %s", verb, err, want)
		}
	}
}
