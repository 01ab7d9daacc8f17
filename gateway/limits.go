package gateway

import (
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/mirobody/mirobody-go/services/wire"
)

// limitsOptions configures limits.
type limitsOptions struct {
	// PerAccount and PerIP are requests per minute; 0 disables the limit.
	PerAccount, PerIP int
	// Streams bounds concurrent SSE streams per key.
	Streams int
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
