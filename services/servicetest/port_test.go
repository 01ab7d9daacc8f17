package servicetest

import (
	"net"
	"strconv"
	"testing"
)

// TestFreeAddr: the addresses are loopback, below the ephemeral range
// (where no outgoing connection takes them), never the same twice, and
// free to bind.
func TestFreeAddr(t *testing.T) {
	low := ephemeralLow()
	seen := map[string]bool{}
	for range 50 {
		addr := FreeAddr(t)
		host, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(p)
		if host != "127.0.0.1" || port < lowestPort || port >= low {
			t.Fatalf("%s: want 127.0.0.1 and a port in [%d, %d)", addr, lowestPort, low)
		}
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("binding %s: %v", addr, err)
		}
		_ = l.Close()
	}
}
