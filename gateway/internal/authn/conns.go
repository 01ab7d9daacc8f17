package authn

import (
	"net"
	"sync"
)

// ConnLimitOptions configures LimitConns.
type ConnLimitOptions struct {
	// PerIP is the most connections one peer IP may hold open
	// (MAX_CONNS_PER_IP); 0 means no cap.
	PerIP int
	// Proxies are exempt: a trusted proxy carries many clients, whose
	// requests the per-IP rate limits still count one by one.
	Proxies *Proxies
	// LocalOnly exempts loopback peers, as LimitsOptions.LocalOnly does
	// for the per-IP budget: on a local-only stack every client is the
	// machine's own user.
	LocalOnly bool
}

// LimitConns caps the open connections of each peer IP on ln. A
// connection over the cap is closed as soon as it is accepted, before
// anything of it is read: answering 429 would mean reading its request,
// which a client holding hundreds of idle connections (slowloris) could
// stretch to the read timeout on each.
func LimitConns(ln net.Listener, opts ConnLimitOptions) net.Listener {
	if opts.PerIP <= 0 {
		return ln
	}
	return &connLimiter{Listener: ln, opts: opts, open: map[string]int{}}
}

type connLimiter struct {
	net.Listener
	opts ConnLimitOptions
	mu   sync.Mutex
	open map[string]int
}

// Accept returns the next connection within its IP's cap, closing those
// over it.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := PeerIP(c.RemoteAddr().String())
		if l.opts.Proxies.Trusted(ip) || (l.opts.LocalOnly && LoopbackHost(ip)) {
			return c, nil
		}
		if !l.take(ip) {
			_ = c.Close()
			continue
		}
		return &limitedConn{Conn: c, release: func() { l.release(ip) }}, nil
	}
}

// take counts one more connection of ip, unless it is at the cap.
func (l *connLimiter) take(ip string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip] >= l.opts.PerIP {
		return false
	}
	l.open[ip]++
	return true
}

// release gives back one connection of ip.
func (l *connLimiter) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip]--; l.open[ip] <= 0 {
		delete(l.open, ip)
	}
}

// limitedConn gives its slot back when closed, once.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// Close closes the connection and frees its slot.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
