package authn

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// TestLimitConns: a peer IP holds at most PerIP connections; one over it
// is closed at once, other IPs are unaffected, closing a connection frees
// its slot, and trusted proxies and (on a local-only stack) loopback peers
// are exempt.
func TestLimitConns(t *testing.T) {
	proxies, err := NewProxies([]string{"127.0.0.1"}, "X-Forwarded-For")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		opts   ConnLimitOptions
		capped bool
	}{
		{"capped", ConnLimitOptions{PerIP: 2}, true},
		{"trusted proxy", ConnLimitOptions{PerIP: 2, Proxies: proxies}, false},
		{"local-only stack", ConnLimitOptions{PerIP: 2, LocalOnly: true}, false},
		{"off", ConnLimitOptions{PerIP: 0}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ln := LimitConns(inner, tc.opts)
			t.Cleanup(func() { _ = ln.Close() })
			accepted := make(chan net.Conn, 8)
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						close(accepted)
						return
					}
					accepted <- c
				}
			}()
			dial := func(from string) net.Conn {
				t.Helper()
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
				c, err := d.Dial("tcp", inner.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.Close() })
				return c
			}
			next := func() net.Conn {
				t.Helper()
				select {
				case c := <-accepted:
					t.Cleanup(func() { _ = c.Close() })
					return c
				case <-time.After(5 * time.Second):
					t.Fatal("no connection accepted")
					return nil
				}
			}
			dial("127.0.0.1")
			first := next()
			dial("127.0.0.1")
			next()
			third := dial("127.0.0.1")
			if tc.capped {
				_ = third.SetReadDeadline(time.Now().Add(5 * time.Second))
				if _, err := third.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
					t.Fatalf("a third connection of one IP: read %v, want it closed", err)
				}
				// Another IP has slots of its own.
				dial("127.0.0.2")
				next()
				// Closing a connection frees its slot.
				_ = first.Close()
				dial("127.0.0.1")
			}
			next()
		})
	}
}

// isReset reports whether err is a connection reset, which a close with
// unread data can show as instead of end of file.
func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}
