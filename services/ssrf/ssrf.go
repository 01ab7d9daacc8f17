// Package ssrf is the one policy for the outbound HTTP requests a user can
// point at a URL (registry-svc/design.md "External MCP servers"): external MCP
// servers and their authorization servers (registry-svc), and OAuth Client ID
// Metadata Documents (gateway). Unless private addresses are allowed
// (MCP_CLIENT_ALLOW_PRIVATE), an address that is loopback, private, link-local,
// unspecified, multicast or otherwise reserved is refused, both when a URL is
// checked and again at dial time on the address actually dialled, so that a
// name re-resolving to an internal address later (DNS rebinding) is still
// refused.
package ssrf

import (
	"context"
	"fmt"
	"log/slog"
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
// protocol assignments, benchmarking, the former class E, the 6to4 relay
// anycast, and every IPv6 range that embeds an IPv4 address a translator
// or relay on the path may turn into an IPv4 packet (NAT64 well-known and
// local-use, SIIT, 6to4, Teredo, IPv4-compatible). Those are refused
// outright, whatever the IPv4 inside: the check would have to follow each
// mechanism's encoding (Teredo's is obfuscated), and no server a user adds
// needs one of these transition addresses (design.md).
var reserved = []netip.Prefix{
	netip.MustParsePrefix("192.0.0.0/24"), netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"), netip.MustParsePrefix("192.88.99.0/24"),
	netip.MustParsePrefix("64:ff9b::/96"), netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("::ffff:0:0:0/96"), netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("2001::/32"), netip.MustParsePrefix("::/96"),
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
	// Log receives a line for each URL refused, with the address and the
	// setting that would allow it; nil means none. That setting is for
	// operators only: it turns the guard off for every user, so the errors
	// users see never name it.
	Log *slog.Logger
}

// refused logs a refusal for operators and returns the error the user
// sees: the address is not allowed, and why, but neither the setting nor
// the address a name resolved to (internal DNS is not the user's
// business). host is "" when the URL names the address itself.
func (g *Guard) refused(ctx context.Context, host string, ip netip.Addr, why string) error {
	if g.Log != nil {
		g.Log.InfoContext(ctx, "outbound URL refused by the SSRF policy; MCP_CLIENT_ALLOW_PRIVATE=true allows such addresses for every user",
			"host", host, "addr", ip.String(), "reason", why)
	}
	if host == "" {
		return fmt.Errorf("refused by the SSRF policy: %s is a %s address, which is not allowed", ip, why)
	}
	return fmt.Errorf("refused by the SSRF policy: %s resolves to a %s address, which is not allowed", host, why)
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
			return nil, g.refused(ctx, "", ip, why)
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
			return nil, g.refused(ctx, host, ip, why)
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
