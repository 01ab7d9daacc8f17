package ssrf

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/services/servicetest"
)

func TestRefusal(t *testing.T) {
	for _, tc := range []struct{ ip, why string }{
		{"127.0.0.1", "loopback"}, {"::1", "loopback"}, {"::ffff:127.0.0.1", "loopback"},
		{"169.254.169.254", "link-local"}, {"fe80::1", "link-local"}, {"224.0.0.1", "link-local"},
		{"10.1.2.3", "private"}, {"192.168.0.1", "private"}, {"172.16.0.1", "private"}, {"fd00::1", "private"},
		{"fc00::1", "private"}, {"100.64.0.1", "private"},
		{"0.0.0.0", "unspecified"}, {"::", "unspecified"}, {"0.1.2.3", "unspecified"},
		{"239.1.1.1", "multicast"},
		{"192.0.0.8", "reserved"}, {"198.18.0.1", "reserved"}, {"240.0.0.1", "reserved"}, {"64:ff9b::a00:1", "reserved"},
		{"8.8.8.8", ""}, {"2606:4700::1111", ""},
		// Issue 15 finding 8: IPv6 forms that embed an IPv4 address are
		// refused outright, whatever that address (design.md).
		{"2002:7f00:1::", "reserved"},            // 6to4 of 127.0.0.1
		{"2002:c0a8:101::1", "reserved"},         // 6to4 of 192.168.1.1
		{"2002:a9fe:a9fe::", "reserved"},         // 6to4 of 169.254.169.254
		{"2002:808:808::1", "reserved"},          // 6to4 of a public address
		{"::7f00:1", "reserved"},                 // IPv4-compatible 127.0.0.1
		{"::a9fe:a9fe", "reserved"},              // IPv4-compatible 169.254.169.254
		{"::808:808", "reserved"},                // IPv4-compatible 8.8.8.8
		{"64:ff9b::7f00:1", "reserved"},          // NAT64 well-known prefix
		{"64:ff9b:1::a00:1", "reserved"},         // NAT64 local-use prefix (RFC 8215)
		{"::ffff:0:a00:1", "reserved"},           // SIIT IPv4-translated
		{"2001:0:4136:e378::1", "reserved"},      // Teredo
		{"192.88.99.1", "reserved"},              // 6to4 relay anycast
		{"::ffff:169.254.169.254", "link-local"}, // IPv4-mapped is unmapped first
		{"2001:4860:4860::8888", ""},             // next to Teredo, still public
	} {
		if got := Refusal(netip.MustParseAddr(tc.ip)); got != tc.why {
			t.Errorf("Refusal(%s) = %q, want %q", tc.ip, got, tc.why)
		}
	}
}

// TestRefusalMessages is the regression test of issue 15 finding 8: what
// the user sees says the address is not allowed without naming the
// setting that turns the guard off for everyone, nor what a name resolved
// to; the operator's log has both.
func TestRefusalMessages(t *testing.T) {
	log, lb := servicetest.CaptureLogger(t)
	g := &Guard{Log: log}
	for _, u := range []string{"http://127.0.0.1:9/mcp", "http://localhost:9/mcp", "http://[fd00::1]/mcp"} {
		_, err := g.CheckURL(context.Background(), u)
		if err == nil || !strings.Contains(err.Error(), "not allowed") {
			t.Fatalf("CheckURL(%s) = %v, want a refusal saying the address is not allowed", u, err)
		}
		if strings.Contains(err.Error(), "MCP_CLIENT_ALLOW_PRIVATE") || strings.Contains(err.Error(), "set ") {
			t.Errorf("CheckURL(%s): the user is told how to turn the guard off: %v", u, err)
		}
		if strings.HasPrefix(u, "http://localhost") && strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("CheckURL(%s): the user is told what the name resolved to: %v", u, err)
		}
	}
	logs := lb.String()
	if strings.Count(logs, "MCP_CLIENT_ALLOW_PRIVATE") != 3 || !strings.Contains(logs, "addr=127.0.0.1") || !strings.Contains(logs, "host=localhost") {
		t.Errorf("operator log: %s", logs)
	}
}

func TestCheckURL(t *testing.T) {
	ctx := context.Background()
	g := &Guard{}
	for _, tc := range []struct{ url, want string }{
		{"http://127.0.0.1:9/mcp", "127.0.0.1 is a loopback address"},
		{"http://169.254.169.254/latest/meta-data", "169.254.169.254 is a link-local address"},
		{"http://localhost:9/mcp", "localhost resolves to"},
		{"http://[::1]:9/mcp", "is a loopback address"},
		{"ftp://example.com/mcp", "absolute http or https URL"},
		{"/mcp", "absolute http or https URL"},
		{"https://user:pw@example.com/mcp", "must not carry credentials"},
		{"https://example.com/mcp#x", "must not have a fragment"},
	} {
		_, err := g.CheckURL(ctx, tc.url)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckURL(%s) = %v, want an error containing %q", tc.url, err, tc.want)
		}
	}
	for _, u := range []string{"http://[2002:7f00:1::]/mcp", "http://[::7f00:1]:8080/mcp", "http://[64:ff9b:1::a9fe:a9fe]/"} {
		if _, err := g.CheckURL(ctx, u); err == nil || !strings.Contains(err.Error(), "is a reserved address") {
			t.Errorf("CheckURL(%s) = %v, want a refusal", u, err)
		}
	}
	if _, err := (&Guard{AllowPrivate: true}).CheckURL(ctx, "http://localhost:9/mcp"); err != nil {
		t.Errorf("with AllowPrivate, localhost is refused: %v", err)
	}
	for _, addr := range []string{"127.0.0.1:80", "[::1]:443", "10.0.0.1:80"} {
		if err := g.Control("tcp", addr, nil); err == nil || !strings.Contains(err.Error(), "refused by the SSRF policy") {
			t.Errorf("Control(%s) = %v, want a refusal", addr, err)
		}
	}
	if err := g.Control("tcp", "8.8.8.8:443", nil); err != nil {
		t.Errorf("Control(8.8.8.8) = %v", err)
	}
}
