package authn

import (
	"context"
	"fmt"
	"net"
	"net/http"

	"github.com/realclientip/realclientip-go"
)

// Proxies resolves the client IP of a request behind trusted reverse
// proxies (TRUSTED_PROXIES): a peer that is one of them is believed about
// the client it forwards, anyone else is the client. design.md "Client IP"
// says why the walk goes right to left and reads one header only.
type Proxies struct {
	trusted []net.IPNet
	// header walks the forwarding header right to left past trusted hops.
	header realclientip.Strategy
}

// NewProxies returns the resolver for trusted (IP addresses and CIDR
// ranges) and header, X-Forwarded-For or Forwarded. No trusted proxies
// means every peer is the client.
func NewProxies(trusted []string, header string) (*Proxies, error) {
	nets, err := realclientip.AddressesAndRangesToIPNets(trusted...)
	if err != nil {
		return nil, fmt.Errorf("parsing TRUSTED_PROXIES: %w", err)
	}
	strategy, err := realclientip.NewRightmostTrustedRangeStrategy(http.CanonicalHeaderKey(header), nets)
	if err != nil {
		return nil, fmt.Errorf("parsing TRUSTED_PROXY_HEADER: %w", err)
	}
	return &Proxies{trusted: nets, header: strategy}, nil
}

// Trusted reports whether ip, a peer address, is a trusted proxy. A nil
// Proxies trusts nobody.
func (p *Proxies) Trusted(ip string) bool {
	if p == nil {
		return false
	}
	parsed := net.ParseIP(ip)
	for _, n := range p.trusted {
		if n.Contains(parsed) {
			return true
		}
	}
	return false
}

// Resolve returns the client IP of r: the rightmost address of the
// forwarding header that is not a trusted proxy when the peer is trusted,
// else the peer. A trusted peer whose header names no usable address (all
// hops trusted, a garbled entry, "unknown") counts as the client itself.
func (p *Proxies) Resolve(r *http.Request) string {
	peer := PeerIP(r.RemoteAddr)
	if !p.Trusted(peer) {
		return peer
	}
	if ip := p.header.ClientIP(r.Header, r.RemoteAddr); ip != "" {
		return ip
	}
	return peer
}

type clientIPKey struct{}

// withClientIP records r's client IP, as p resolves it, in its context.
func withClientIP(r *http.Request, p *Proxies) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), clientIPKey{}, p.Resolve(r)))
}

// ClientIP is the client IP of r as Middleware resolved it (behind a
// trusted proxy, the client the proxy forwards); a request that did not
// pass through Middleware gets its peer address. Every per-IP limit keys
// on it.
func ClientIP(r *http.Request) string {
	if ip, ok := r.Context().Value(clientIPKey{}).(string); ok {
		return ip
	}
	return PeerIP(r.RemoteAddr)
}

// PeerIP is the IP of a host:port peer address (the address itself when
// it has no port).
func PeerIP(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}
