package servicetest

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// lowestPort is where FreeAddr starts looking: above the well-known and
// most registered services' ports.
const lowestPort = 10000

// handedOut are the ports FreeAddr returned in this process, so that two
// calls before their processes bind never name the same one.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// FreeAddr returns a loopback address (127.0.0.1:port) free a moment ago,
// for a server the test starts later that binds the port itself (a child
// process, or a config naming the address before the server runs).
//
// The port is taken below the kernel's ephemeral range. A port from
// Listen("127.0.0.1:0") is in that range, and between the close here and
// the server's bind the kernel may give the same number to an outgoing
// connection: in CI the chaos run's gateway failed with "address already
// in use" that way, the run making hundreds of connections a second.
// Below the range only another explicit bind can take the port.
func FreeAddr(t testing.TB) string {
	t.Helper()
	if addr, ok := freeBelowEphemeral(); ok {
		return addr
	}
	// No room below the range, or no free port in it: the kernel chooses.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// freeBelowEphemeral tries random ports between lowestPort and the
// ephemeral range that this process has not handed out yet.
func freeBelowEphemeral() (string, bool) {
	low := ephemeralLow()
	if low-lowestPort < 1000 {
		return "", false
	}
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 200 {
		port := lowestPort + rand.IntN(low-lowestPort)
		if handedOut.ports[port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // in use: try another
		}
		_ = l.Close()
		handedOut.ports[port] = true
		return l.Addr().String(), true
	}
	return "", false
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default when it cannot be read), read once per process.
var ephemeralLow = sync.OnceValue(func() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				return n
			}
		}
	}
	return 32768
})

// FreePort is FreeAddr's port alone.
func FreePort(t testing.TB) string {
	t.Helper()
	_, port, err := net.SplitHostPort(FreeAddr(t))
	if err != nil {
		t.Fatalf("splitting a loopback address: %v", err)
	}
	return port
}
