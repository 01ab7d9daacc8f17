package gateway

import (
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"golang.org/x/time/rate"

	"github.com/mirobody/mirobody-go/services/wire"
)

// limitsOptions configures limits.
type limitsOptions struct {
	// PerAccount and PerIP are requests per minute; 0 disables the limit.
	PerAccount, PerIP int
	// Streams bounds concurrent SSE streams per key.
	Streams int
	// LocalOnly says the gateway is published on a loopback URL only
	// (MCP_PUBLIC_URL names localhost or a loopback IP), so every genuine
	// client runs on this machine: anonymous requests from loopback peers
	// then skip the per-IP budget. A local client (the MCP Inspector, a
	// test suite, an IDE) easily sends a hundred requests in a second, and
	// limiting the machine's own user protects nothing. Behind a proxy the
	// public URL is the proxy's, so the exemption is off there.
	LocalOnly bool
}

// limits holds the gateway's per-replica rate limiters and stream counts.
// Each replica limits on its own, so the effective limit of N replicas
// behind a round-robin balancer is about N times the configured one.
type limits struct {
	opts    limitsOptions
	mu      sync.Mutex
	buckets map[string]*bucket
	streams map[string]int
	swept   time.Time
	now     func() time.Time
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// newLimits returns limits for opts.
func newLimits(opts limitsOptions) *limits {
	return &limits{opts: opts, buckets: map[string]*bucket{}, streams: map[string]int{}, now: time.Now}
}

// allow takes one request from key's bucket. When it is empty it returns
// false and how long until a request would pass.
func (l *limits) allow(key string, account bool) (time.Duration, bool) {
	perMin := l.opts.PerIP
	if account {
		perMin = l.opts.PerAccount
	}
	if perMin <= 0 {
		return 0, true
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	b, ok := l.buckets[key]
	if !ok {
		// A burst of a tenth of a minute's budget absorbs a client's
		// start-up flurry (initialize, list, a few calls) without letting
		// a minute's budget go in one second.
		burst := max(1, perMin/10)
		b = &bucket{lim: rate.NewLimiter(rate.Limit(float64(perMin)/60), burst)}
		l.buckets[key] = b
	}
	b.seen = now
	res := b.lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d, false
	}
	return 0, true
}

// allowAnonymous takes one request of an anonymous caller from its IP's
// bucket.
func (l *limits) allowAnonymous(ip string) (time.Duration, bool) {
	if l.opts.LocalOnly && isLoopbackHost(ip) {
		return 0, true
	}
	return l.allow("ip:"+ip, false)
}

// allowInvalidToken counts a presented-but-invalid bearer token against its
// IP's bucket. Loopback peers are not exempt: a wrong token is a failed
// guess wherever it comes from.
func (l *limits) allowInvalidToken(ip string) (time.Duration, bool) {
	return l.allow("ip:"+ip, false)
}

// sweep drops buckets idle for over a minute (they are full again by then),
// at most once a minute, so that the map stays bounded by recent clients.
func (l *limits) sweep(now time.Time) {
	if now.Sub(l.swept) < time.Minute {
		return
	}
	l.swept = now
	for k, b := range l.buckets {
		if now.Sub(b.seen) > time.Minute {
			delete(l.buckets, k)
		}
	}
}

// openStream counts one more stream for key; release gives it back.
func (l *limits) openStream(key string) (release func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.streams[key] >= l.opts.Streams {
		return nil, false
	}
	l.streams[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.streams[key]--; l.streams[key] <= 0 {
				delete(l.streams, key)
			}
		})
	}, true
}

// retryAfter formats d for the Retry-After header: whole seconds, at least 1.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

// clientIP is the peer address of r. Forwarded headers are not trusted:
// behind a proxy, rate limits per IP apply to the proxy.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// limitInvalidTokens verifies the bearer token of every request, on every
// route (well-known documents, /api, /mcp, /oauth and routes yet to come),
// and counts an invalid one against the client IP's budget, so that
// guessing keys costs the guesser its per-IP rate whatever route it picks.
// Past the budget it answers 429 with Retry-After. The verdict rides in the
// request context, so the route's own authentication does not verify the
// token a second time.
func (s *Service) limitInvalidTokens(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		token := bearer(r.Header.Get(echo.HeaderAuthorization))
		if token == "" {
			return next(c)
		}
		p, err := s.authenticate(r.Context(), token)
		c.SetRequest(r.WithContext(withVerdict(r.Context(), &verdict{token: token, p: p, err: err})))
		if !wire.IsCode(err, wire.Unauthenticated) {
			return next(c)
		}
		wait, ok := s.mcp.Limits.allowInvalidToken(clientIP(r))
		if ok {
			return next(c)
		}
		c.Response().Header().Set("Retry-After", retryAfter(wait))
		if c.Path() == "/mcp" {
			// MCP clients read JSON-RPC errors, whatever the status.
			writeRPCError(c.Response(), nullID, newRPCError(http.StatusTooManyRequests, jsonrpc.CodeInternalError, "rate limit exceeded, retry later"))
			return nil
		}
		return wire.Errorf(wire.ResourceExhausted, "rate limit exceeded, retry later")
	}
}

// rateLimit applies the per-account budget of /mcp to the authenticated
// /api routes (SPEC §6), sharing one bucket per account across both.
func (s *Service) rateLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if e := s.mcp.admit(c.Request(), principal(c)); e != nil {
			for k, v := range e.Header {
				c.Response().Header().Set(k, v)
			}
			return wire.Errorf(wire.ResourceExhausted, "rate limit exceeded, retry later")
		}
		return next(c)
	}
}
