package servicetest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections to a target (a NATS server, Postgres) until Kill
// cuts them all at once: to the server, the process behind the proxy died
// as with kill -9, and it cannot reconnect.
type Proxy struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

// NewProxy listens on a free loopback port and forwards to target
// (host:port). It is killed at cleanup.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{l: l}
	go p.serve(target)
	t.Cleanup(p.Kill)
	return p
}

func (p *Proxy) serve(target string) {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(u, c); u.Close() }()
		go func() { _, _ = io.Copy(c, u); c.Close() }()
	}
}

// Addr is the proxy's host:port, for a target other than NATS (Postgres).
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// URL is the proxy's NATS URL.
func (p *Proxy) URL() string { return "nats://" + p.l.Addr().String() }

// Kill closes the listener and every connection through the proxy.
func (p *Proxy) Kill() {
	p.l.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
