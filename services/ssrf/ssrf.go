// Package ssrf is the one policy for the outbound HTTP requests a user can
// point at a URL (SPEC §7): external MCP servers and their authorization
// servers (registry-svc), and OAuth Client ID Metadata Documents (gateway).
// Unless private addresses are allowed (MCP_CLIENT_ALLOW_PRIVATE), an
// address that is loopback, private, link-local, unspecified, multicast or
// otherwise reserved is refused, both when a URL is checked and again at
// dial time on the address actually dialled, so that a name re-resolving to
// an internal address later (DNS rebinding) is still refused.
package ssrf

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// sharedSpace is RFC 6598 carrier-grade NAT space, internal like RFC 1918.
var sharedSpace = netip.MustParsePrefix("100.64.0.0/10")

// reserved are special-purpose ranges that netip's predicates miss: IETF
// protocol assignments, benchmarking, the former class E, and NAT64 (which
// can reach IPv4 internals).
var reserved = []netip.Prefix{
	netip.MustParsePrefix("192.0.0.0/24"), netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"), netip.MustParsePrefix("64:ff9b::/96"),
}

// Refusal says why ip may not be dialled ("loopback", "private",
// "link-local", "unspecified", "multicast" or "reserved"), or "" when it is
// a public unicast address.
func Refusal(ip netip.Addr) string {
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
	for _, p := range reserved {
		if p.Contains(ip) {
			return "reserved"
		}
	}
	if !ip.IsGlobalUnicast() {
		return "reserved"
	}
	return ""
}

// Guard applies the policy; AllowPrivate turns it off (tests, local use).
type Guard struct {
	AllowPrivate bool
	// Resolver resolves host names in CheckURL; nil means net.DefaultResolver.
	Resolver *net.Resolver
}

func (g *Guard) refusal(ip netip.Addr) string {
	if g.AllowPrivate {
		return ""
	}
	return Refusal(ip)
}

// CheckURL validates an absolute http(s) URL without credentials or
// fragment and, under the policy, resolves its host and refuses it when any
// address it resolves to is refused. The error is meant for the caller: it
// says why.
func (g *Guard) CheckURL(ctx context.Context, raw string) (*url.URL, error) {
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
	if g.AllowPrivate {
		return u, nil
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if why := g.refusal(ip); why != "" {
			return nil, fmt.Errorf("refused by the SSRF policy: %s is a %s address (set MCP_CLIENT_ALLOW_PRIVATE=true to allow it)", host, why)
		}
		return u, nil
	}
	resolver := g.Resolver
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := resolver.LookupNetIP(ctx, "ip", host)
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

// Control is the net.Dialer hook: it runs after resolution, on the address
// about to be dialled.
func (g *Guard) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("refused by the SSRF policy: cannot parse the dialled address %q", address)
	}
	if why := g.refusal(ap.Addr()); why != "" {
		return fmt.Errorf("refused by the SSRF policy: %s is a %s address", ap.Addr(), why)
	}
	return nil
}
