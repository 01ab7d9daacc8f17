package ssrf

import (
	"context"
	"net/netip"
	"strings"
	"testing"
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
	} {
		if got := Refusal(netip.MustParseAddr(tc.ip)); got != tc.why {
			t.Errorf("Refusal(%s) = %q, want %q", tc.ip, got, tc.why)
		}
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
