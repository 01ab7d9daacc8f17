package registrysvc

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/ssrf"
)

// TestCoalescer: adds during a window cost one run at its end; a quiet key
// runs at once; keys do not wait for each other.
func TestCoalescer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		runs := map[string][]time.Duration{}
		start := time.Now()
		c := newCoalescer(500*time.Millisecond, func(k string) {
			mu.Lock()
			defer mu.Unlock()
			runs[k] = append(runs[k], time.Since(start))
		})
		defer c.close()
		// 3,000 adds over 3 s, as a flooding server sends them.
		for range 3000 {
			c.add("flood")
			time.Sleep(time.Millisecond)
		}
		c.add("quiet")
		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if n := len(runs["flood"]); n < 6 || n > 7 {
			t.Errorf("3,000 adds over 3 s ran %d times (%v), want one per 500 ms window", n, runs["flood"])
		}
		if last := runs["flood"][len(runs["flood"])-1]; last < 3*time.Second {
			t.Errorf("the last run was at %s, before the last add", last)
		}
		if q := runs["quiet"]; len(q) != 1 || q[0] != 3*time.Second {
			t.Errorf("a quiet key ran at %v, want once at once (3s)", q)
		}
	})
}

// TestExternalListChangedFlood: 3,000 list_changed notifications from a
// real server become a few events for the account, at most one per
// window. (Before: 1,449 NATS events, each sent on to every MCP session of
// the account.)
func TestExternalListChangedFlood(t *testing.T) {
	url := servicetest.NATS(t)
	log, _ := servicetest.CaptureLogger(t)
	const window = 250 * time.Millisecond
	x := newExternal(externalOptions{Log: log, Guard: &ssrf.Guard{AllowPrivate: true}, Pub: servicetest.Client(t, url),
		MaxBytes: 1 << 20, MaxTools: 100, Window: window})
	t.Cleanup(x.close)

	var events atomic.Int64
	sentinel := make(chan struct{}, 1)
	sub, err := servicetest.Conn(t, url).Subscribe(registry.AccountChanged.Subject, func(m *nats.Msg) {
		switch registry.AccountChanged.Token(m.Subject) {
		case alice.AccountID:
			events.Add(1)
		case "sentinel":
			sentinel <- struct{}{}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	// seen waits until every event published so far has arrived: one
	// publisher's messages arrive in order.
	seen := func() int64 {
		t.Helper()
		x.publish("sentinel")
		select {
		case <-sentinel:
		case <-time.After(10 * time.Second):
			t.Fatal("the sentinel event did not arrive")
		}
		return events.Load()
	}

	srv := servicetest.NewMCPServer(t, servicetest.MCPServerOptions{})
	const flood = 3000
	var flooding atomic.Bool
	sent := make(chan struct{})
	srv.Server.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "notifications/tools/list_changed" || !flooding.CompareAndSwap(true, false) {
				return next(ctx, method, req)
			}
			defer close(sent)
			for range flood {
				if _, err := next(ctx, method, req); err != nil {
					return nil, err
				}
			}
			return nil, nil
		}
	})
	mcp.AddTool(srv.Server, &mcp.Tool{Name: "first"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	c := x.conn(connKey{account: alice.AccountID, name: "flood"}, newSpec("flood", srv.URL, "", nil), false)
	if _, _, err := c.load(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	// One change first, to know the server's notifications reach us.
	mcp.AddTool(srv.Server, &mcp.Tool{Name: "second"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	servicetest.Eventually(t, 10*time.Second, func() bool { return seen() > 0 }, "an event for one list_changed")
	servicetest.Eventually(t, 10*time.Second, func() bool { return x.announcer.idle(alice.AccountID) }, "the window of the first change closed")
	before := seen()

	start := time.Now()
	flooding.Store(true)
	mcp.AddTool(srv.Server, &mcp.Tool{Name: "third"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	// A ping sent after the flood is answered once the client has handled
	// every notification before it (the SDK handles them in order).
	select {
	case <-sent:
	case <-time.After(30 * time.Second):
		t.Fatal("the flood was not sent")
	}
	for ss := range srv.Server.Sessions() {
		if err := ss.Ping(context.Background(), nil); err != nil {
			t.Fatalf("pinging after the flood: %v", err)
		}
	}
	took := time.Since(start)
	servicetest.Eventually(t, 10*time.Second, func() bool { return x.announcer.idle(alice.AccountID) }, "the window of the flood closed")
	got := seen() - before
	// One at once, then at most one per window, the last one window after.
	limit := int64(took/window) + 2
	t.Logf("%d list_changed over %s gave %d events (limit %d)", flood, took.Round(time.Millisecond), got, limit)
	if got < 1 || got > limit {
		t.Errorf("%d list_changed gave %d events, want 1 to %d", flood, got, limit)
	}
	if b, _ := json.Marshal(c.snapshotHealth()); !strings.Contains(string(b), `"status":"ok"`) {
		t.Errorf("health after the flood: %s", b)
	}
}

// idle reports whether key has no open window.
func (c *coalescer) idle(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open[key] == nil
}
