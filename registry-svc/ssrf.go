package registrysvc

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// addrGuard is the SSRF policy for external MCP servers (SPEC §7): unless
// MCP_CLIENT_ALLOW_PRIVATE is set, an address that is private, loopback,
// link-local, unspecified or multicast is refused. URLs are checked when a
// server is added, and every connection is checked again at dial time on
// the address actually dialled, so that a name re-resolving to an internal
// address later (DNS rebinding) is still refused.
type addrGuard struct {
	allowPrivate bool
	resolver     *net.Resolver
}

// sharedSpace is RFC 6598 carrier-grade NAT space, internal like RFC 1918.
var sharedSpace = netip.MustParsePrefix("100.64.0.0/10")

// refusal says why ip may not be dialled, or "" when it may.
func (g *addrGuard) refusal(ip netip.Addr) string {
	if g.allowPrivate {
		return ""
	}
	ip = ip.Unmap()
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate(), ip.Is4() && sharedSpace.Contains(ip):
		return "private"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	case ip.Is4() && ip.As4()[0] == 0:
		return "unspecified" // 0.0.0.0/8 reaches this host on Linux
	}
	return ""
}

// checkURL validates a server URL and, under the policy, resolves its host
// and refuses it when any address it resolves to is refused. The error is
// meant for the caller: it says why.
func (g *addrGuard) checkURL(ctx context.Context, raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("URL %q must be an absolute http or https URL", raw)
	}
	if u.User != nil {
		return nil, fmt.Errorf("URL must not carry credentials; give an access token or headers instead")
	}
	if u.Fragment != "" {
		return nil, fmt.Errorf("URL must not have a fragment")
	}
	if g.allowPrivate {
		return u, nil
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if why := g.refusal(ip); why != "" {
			return nil, fmt.Errorf("refused by the SSRF policy: %s is a %s address (set MCP_CLIENT_ALLOW_PRIVATE=true to allow it)", host, why)
		}
		return u, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := g.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("host %s does not resolve", host)
	}
	for _, ip := range ips {
		if why := g.refusal(ip); why != "" {
			return nil, fmt.Errorf("refused by the SSRF policy: %s resolves to %s, a %s address (set MCP_CLIENT_ALLOW_PRIVATE=true to allow it)", host, ip, why)
		}
	}
	return u, nil
}

// control is the net.Dialer hook: it runs after resolution, on the address
// about to be dialled.
func (g *addrGuard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("refused by the SSRF policy: cannot parse the dialled address %q", address)
	}
	if why := g.refusal(ap.Addr()); why != "" {
		return fmt.Errorf("refused by the SSRF policy: %s is a %s address", ap.Addr(), why)
	}
	return nil
}

// transport returns the HTTP transport for external servers: every dial
// goes through the guard, and environment proxies are ignored (a proxy
// would dial on our behalf, past the guard).
func (g *addrGuard) transport() *http.Transport {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: g.control, Resolver: g.resolver}
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   8,
	}
}

// credentials adds a server's own headers to every request. It replaces
// whatever Authorization the request had, so nothing of Mirobody's can
// reach the server.
type credentials struct {
	base    http.RoundTripper
	headers http.Header
}

// RoundTrip implements http.RoundTripper.
func (c *credentials) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Del("Authorization")
	r.Header.Del("Cookie")
	for k, v := range c.headers {
		r.Header[k] = v
	}
	return c.base.RoundTrip(r)
}

// noRedirects keeps credentials from following a redirect to another host:
// an MCP endpoint has no reason to redirect.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// reservedHeaders may not be set by a server's configuration: the
// transport and the MCP protocol own them.
var reservedHeaders = []string{"Host", "Content-Type", "Content-Length", "Accept", "Connection", "Transfer-Encoding",
	"Mcp-Session-Id", "Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name", "Last-Event-Id", "Cookie"}

// checkHeaders validates configured header names and values.
func checkHeaders(h map[string]string) error {
	for k, v := range h {
		if k == "" || len(k) > 64 || strings.IndexFunc(k, func(r rune) bool {
			return !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
		}) >= 0 {
			return fmt.Errorf("header name %q must be 1 to 64 letters, digits or dashes", k)
		}
		for _, r := range reservedHeaders {
			if strings.EqualFold(k, r) {
				return fmt.Errorf("header %s cannot be configured", k)
			}
		}
		if strings.ContainsAny(v, "\r\n\x00") || len(v) > 8192 {
			return fmt.Errorf("header %s has an invalid value", k)
		}
	}
	return nil
}
