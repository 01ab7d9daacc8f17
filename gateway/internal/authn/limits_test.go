package authn

import (
	"testing"
	"time"
)

// TestLimitsLocalOnly checks the loopback exemption of a local-only stack:
// anonymous loopback peers skip the per-IP budget, others and invalid
// tokens do not.
func TestLimitsLocalOnly(t *testing.T) {
	for _, tc := range []struct {
		name      string
		localOnly bool
		ip        string
		limited   bool
	}{
		{"local-only, IPv4 loopback", true, "127.0.0.1", false},
		{"local-only, IPv6 loopback", true, "::1", false},
		{"local-only, remote peer", true, "192.0.2.7", true},
		{"public, loopback peer (a local proxy)", false, "127.0.0.1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLimits(LimitsOptions{PerIP: 1, LocalOnly: tc.localOnly})
			now := time.Unix(0, 0)
			l.now = func() time.Time { return now }
			refused := false
			for range 100 {
				if _, ok := l.allowAnonymous(tc.ip); !ok {
					refused = true
				}
			}
			if refused != tc.limited {
				t.Errorf("100 anonymous requests: refused %v, want %v", refused, tc.limited)
			}
			l = NewLimits(LimitsOptions{PerIP: 1, LocalOnly: tc.localOnly})
			l.now = func() time.Time { return now }
			l.AllowInvalidToken(tc.ip)
			if _, ok := l.AllowInvalidToken(tc.ip); ok {
				t.Error("a second invalid token within the burst of one passed")
			}
		})
	}
}

func TestLoopbackURL(t *testing.T) {
	for raw, want := range map[string]bool{
		"http://localhost:18080": true, "http://127.0.0.1:8080/": true, "http://[::1]:80": true,
		"https://mcp.example.com": false, "http://10.0.0.1": false, "": false,
	} {
		if got := LoopbackURL(raw); got != want {
			t.Errorf("LoopbackURL(%q) = %v, want %v", raw, got, want)
		}
	}
}

func TestLimits(t *testing.T) {
	l := NewLimits(LimitsOptions{PerAccount: 60, PerIP: 0, Streams: 2})
	now := time.Unix(0, 0)
	l.now = func() time.Time { return now }
	for i := range 6 { // burst: a tenth of 60/min
		if _, ok := l.Allow("acct:x", true); !ok {
			t.Fatalf("request %d refused within the burst", i)
		}
	}
	wait, ok := l.Allow("acct:x", true)
	if ok || RetryAfter(wait) != "1" {
		t.Fatalf("over the burst: ok=%v wait=%v", ok, wait)
	}
	now = now.Add(time.Second)
	if _, ok := l.Allow("acct:x", true); !ok {
		t.Error("refused after the bucket refilled")
	}
	if _, ok := l.Allow("ip:1.2.3.4", false); !ok {
		t.Error("PerIP 0 must not limit")
	}
	r1, ok1 := l.openStream("k")
	_, ok2 := l.openStream("k")
	_, ok3 := l.openStream("k")
	if !ok1 || !ok2 || ok3 {
		t.Fatalf("streams: %v %v %v, want true true false", ok1, ok2, ok3)
	}
	r1()
	r1() // releasing twice gives back one stream only
	if _, ok := l.openStream("k"); !ok {
		t.Error("a released stream was not given back")
	}
	if _, ok := l.openStream("k"); ok {
		t.Error("a double release gave back two streams")
	}
}
