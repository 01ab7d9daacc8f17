package registrysvc

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/mirobody/mirobody-go/services/ssrf"
)

// guardedTransport returns the HTTP transport for external servers: every
// dial goes through the SSRF guard, and environment proxies are ignored (a
// proxy would dial on our behalf, past the guard).
func guardedTransport(g *ssrf.Guard) *http.Transport {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: g.Control, Resolver: g.Resolver}
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
