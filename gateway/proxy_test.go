package gateway

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/servicetest"
)

// TestRateLimitsBehindProxy is the regression test of issue 15 finding 7:
// behind a reverse proxy listed in TRUSTED_PROXIES, one client's 700
// /oauth/revoke calls exhaust that client's budget only, and another user
// behind the same proxy still reaches /oauth/token; an authenticated
// request counts against its account, not the shared IP; a peer that is
// not a trusted proxy cannot pick its bucket with X-Forwarded-For.
func TestRateLimitsBehindProxy(t *testing.T) {
	f := startFakes(t)
	cfg := testConfig(t, f.url)
	cfg.RateLimitIP = 600
	cfg.RateLimitAcct = 600
	cfg.TrustedProxies = []string{"127.0.0.1", "::1"} // the test client plays the proxy
	base := strings.TrimSuffix(startGateway(t, cfg), "/mcp")
	form := []string{"Content-Type", "application/x-www-form-urlencoded"}
	attacker, victim := "203.0.113.7", "198.51.100.9"

	limited := 0
	for range 700 {
		resp, _ := send(t, http.MethodPost, base+"/oauth/revoke", "token=nope", append(form, "X-Forwarded-For", attacker)...)
		if resp.StatusCode == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("700 revocations from one client were never limited")
	}
	resp, _ := send(t, http.MethodPost, base+"/oauth/token", "grant_type=refresh_token&refresh_token=x",
		append(form, "X-Forwarded-For", attacker)...)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the flooding client's own /oauth/token: %d, want 429", resp.StatusCode)
	}
	// The victim's proxy hop list ends in another proxy of ours: walking
	// right to left skips it.
	resp, b := send(t, http.MethodPost, base+"/oauth/token", "grant_type=refresh_token&refresh_token=x",
		append(form, "X-Forwarded-For", "6.6.6.6, "+victim+", 127.0.0.1")...)
	if resp.StatusCode == http.StatusTooManyRequests {
		t.Fatalf("another user behind the same proxy is locked out of /oauth/token: %d %s", resp.StatusCode, b)
	}

	// /mcp: the flooding client's anonymous budget is its own too, and
	// with an API key the request is the account's.
	cfg.RateLimitIP = 60 // a burst of 6
	mcp := startGateway(t, cfg)
	for range 10 {
		post(t, mcp, listBody, "X-Forwarded-For", attacker)
	}
	if resp, _ := post(t, mcp, listBody, "X-Forwarded-For", attacker); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("anonymous /mcp past the IP budget: %d, want 429", resp.StatusCode)
	}
	if resp, b := post(t, mcp, listBody, "X-Forwarded-For", attacker, "Authorization", "Bearer "+keyGood); resp.StatusCode != 200 {
		t.Errorf("an API key from the exhausted IP: %d %s, want 200 (counted per account)", resp.StatusCode, b)
	}
	if resp, _ := post(t, mcp, listBody, "X-Forwarded-For", victim); resp.StatusCode != 200 {
		t.Errorf("another anonymous client behind the proxy: %d, want 200", resp.StatusCode)
	}
}

// TestForwardedHeaderNotTrusted: without TRUSTED_PROXIES a client cannot
// escape its budget by sending a new X-Forwarded-For on each request.
func TestForwardedHeaderNotTrusted(t *testing.T) {
	f := startFakes(t)
	cfg := testConfig(t, f.url)
	cfg.RateLimitIP = 60 // a burst of 6
	mcp := startGateway(t, cfg)
	limited := false
	for i := range 20 {
		resp, _ := post(t, mcp, listBody, "X-Forwarded-For", "203.0.113."+strings.Repeat("1", 1+i%3))
		limited = limited || resp.StatusCode == http.StatusTooManyRequests
	}
	if !limited {
		t.Error("spoofed X-Forwarded-For values from an untrusted peer each got a budget of their own")
	}
}

// TestMaxConnsPerIP: a peer past MAX_CONNS_PER_IP has its new connection
// closed, and gets one again once it closes one of its own.
func TestMaxConnsPerIP(t *testing.T) {
	f := startFakes(t)
	cfg := testConfig(t, f.url) // a public URL: loopback peers are not exempt
	cfg.MaxConnsPerIP = 2
	addr := startService(t, cfg).Addr()
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		must(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	// ping sends a request on c and reports whether an answer came back.
	ping := func(c net.Conn) bool {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("GET /.well-known/oauth-protected-resource HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			return false
		}
		buf := make([]byte, 12)
		n, err := c.Read(buf)
		return err == nil && strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200")
	}
	a, b := dial(), dial()
	if !ping(a) || !ping(b) {
		t.Fatal("the first two connections are not served")
	}
	if ping(dial()) {
		t.Fatal("a third connection of the same IP was served")
	}
	_ = a.Close()
	// The server notices a's close on its own time.
	servicetest.Eventually(t, 5*time.Second, func() bool { return ping(dial()) }, "a connection is served after one of the two closed")
}
