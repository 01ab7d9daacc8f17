package authn

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestProxiesResolve(t *testing.T) {
	trusted := []string{"10.0.0.0/8", "::1"}
	for _, tc := range []struct {
		name, header, peer string
		trusted            []string
		hdr                map[string]string
		want               string
	}{
		{"no proxies: the header is ignored", "X-Forwarded-For", "203.0.113.5:1234", nil,
			map[string]string{"X-Forwarded-For": "1.2.3.4"}, "203.0.113.5"},
		{"untrusted peer: the header is ignored", "X-Forwarded-For", "192.0.2.1:1234", trusted,
			map[string]string{"X-Forwarded-For": "1.2.3.4"}, "192.0.2.1"},
		{"trusted peer", "X-Forwarded-For", "10.0.0.2:1234", trusted,
			map[string]string{"X-Forwarded-For": "1.2.3.4"}, "1.2.3.4"},
		{"a spoofed leftmost entry loses", "X-Forwarded-For", "10.0.0.2:1234", trusted,
			map[string]string{"X-Forwarded-For": "6.6.6.6, 1.2.3.4"}, "1.2.3.4"},
		{"trusted hops are skipped", "X-Forwarded-For", "10.0.0.2:1234", trusted,
			map[string]string{"X-Forwarded-For": "6.6.6.6, 1.2.3.4, 10.9.9.9"}, "1.2.3.4"},
		{"IPv6 loopback proxy, IPv6 client", "X-Forwarded-For", "[::1]:1234", trusted,
			map[string]string{"X-Forwarded-For": "2001:db8::7"}, "2001:db8::7"},
		{"IPv4-mapped peer", "X-Forwarded-For", "[::ffff:10.0.0.2]:1234", trusted,
			map[string]string{"X-Forwarded-For": "1.2.3.4"}, "1.2.3.4"},
		{"no header: the proxy itself", "X-Forwarded-For", "10.0.0.2:1234", trusted, nil, "10.0.0.2"},
		{"every hop trusted: the proxy", "X-Forwarded-For", "10.0.0.2:1234", trusted,
			map[string]string{"X-Forwarded-For": "10.0.0.5"}, "10.0.0.2"},
		{"garbled entry: the proxy", "X-Forwarded-For", "10.0.0.2:1234", trusted,
			map[string]string{"X-Forwarded-For": "1.2.3.4, bogus"}, "10.0.0.2"},
		{"the other header is not read", "X-Forwarded-For", "10.0.0.2:1234", trusted,
			map[string]string{"Forwarded": "for=1.2.3.4"}, "10.0.0.2"},
		{"Forwarded", "Forwarded", "10.0.0.2:1234", trusted,
			map[string]string{"Forwarded": `for=6.6.6.6, for="[2001:db8::1]:4711";proto=https, for=10.1.1.1`}, "2001:db8::1"},
		{"Forwarded ignores X-Forwarded-For", "Forwarded", "10.0.0.2:1234", trusted,
			map[string]string{"X-Forwarded-For": "1.2.3.4", "Forwarded": "for=5.6.7.8"}, "5.6.7.8"},
		{"Forwarded for=unknown: the proxy", "Forwarded", "10.0.0.2:1234", trusted,
			map[string]string{"Forwarded": "for=unknown"}, "10.0.0.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewProxies(tc.trusted, tc.header)
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tc.peer
			for k, v := range tc.hdr {
				r.Header.Set(k, v)
			}
			if got := p.Resolve(r); got != tc.want {
				t.Errorf("Resolve = %q, want %q", got, tc.want)
			}
		})
	}
	for _, bad := range [][]string{{"proxy.internal"}, {"10.0.0.0/33"}, {"fe80::1%eth0"}} {
		if _, err := NewProxies(bad, "X-Forwarded-For"); err == nil {
			t.Errorf("NewProxies(%q) accepted", bad)
		}
	}
	if _, err := NewProxies(nil, "X-Real-IP"); err == nil {
		t.Error("NewProxies accepted the header X-Real-IP")
	}
}

// TestMiddlewareClientIP: the middleware resolves the client IP once for
// every route behind it, and a request that bypassed it has its peer's.
func TestMiddlewareClientIP(t *testing.T) {
	p, err := NewProxies([]string{"127.0.0.1"}, "X-Forwarded-For")
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{Limits: NewLimits(LimitsOptions{}), Proxies: p})
	if err != nil {
		t.Fatal(err)
	}
	var got string
	h := a.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = ClientIP(r) }), nil)
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "127.0.0.1:5000"
	r.Header.Set("X-Forwarded-For", "198.51.100.9")
	h.ServeHTTP(httptest.NewRecorder(), r)
	if got != "198.51.100.9" {
		t.Errorf("ClientIP behind the middleware = %q, want the forwarded client", got)
	}
	if ip := ClientIP(r); ip != "127.0.0.1" {
		t.Errorf("ClientIP without the middleware = %q, want the peer", ip)
	}
}
