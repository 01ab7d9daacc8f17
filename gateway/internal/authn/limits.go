package authn

import (
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// LimitsOptions configures Limits.
type LimitsOptions struct {
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

// Limits holds the gateway's per-replica rate limiters and stream counts.
// Each replica limits on its own, so the effective limit of N replicas
// behind a round-robin balancer is about N times the configured one.
type Limits struct {
	opts    LimitsOptions
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

// NewLimits returns limits for opts.
func NewLimits(opts LimitsOptions) *Limits {
	return &Limits{opts: opts, buckets: map[string]*bucket{}, streams: map[string]int{}, now: time.Now}
}

// Allow takes one request from key's bucket, under the per-account budget
// when account is set and the per-IP one otherwise. When the bucket is
// empty it returns false and how long until a request would pass.
func (l *Limits) Allow(key string, account bool) (time.Duration, bool) {
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

// Admit takes one request of p from its account's bucket, or of an
// anonymous caller (p nil) from its IP's bucket. /mcp and /api share the
// account's bucket.
func (l *Limits) Admit(r *http.Request, p *Principal) (time.Duration, bool) {
	if p != nil {
		return l.Allow("acct:"+p.AccountID, true)
	}
	return l.allowAnonymous(ClientIP(r))
}

// allowAnonymous takes one request of an anonymous caller from its IP's
// bucket.
func (l *Limits) allowAnonymous(ip string) (time.Duration, bool) {
	if l.opts.LocalOnly && LoopbackHost(ip) {
		return 0, true
	}
	return l.Allow("ip:"+ip, false)
}

// AllowInvalidToken counts a presented-but-invalid bearer token against its
// IP's bucket. Loopback peers are not exempt: a wrong token is a failed
// guess wherever it comes from.
func (l *Limits) AllowInvalidToken(ip string) (time.Duration, bool) {
	return l.Allow("ip:"+ip, false)
}

// sweep drops buckets idle for over a minute (they are full again by then),
// at most once a minute, so that the map stays bounded by recent clients.
func (l *Limits) sweep(now time.Time) {
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

// OpenStream counts one more open stream of p (of the client IP when p is
// nil); release gives it back.
func (l *Limits) OpenStream(r *http.Request, p *Principal) (release func(), ok bool) {
	key := "ip:" + ClientIP(r)
	if p != nil {
		key = "acct:" + p.AccountID
	}
	return l.openStream(key)
}

// openStream counts one more stream for key.
func (l *Limits) openStream(key string) (release func(), ok bool) {
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

// RetryAfter formats d for the Retry-After header: whole seconds, at least 1.
func RetryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

// LoopbackHost reports whether host is localhost or a loopback IP.
func LoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// LoopbackURL reports whether raw is a URL on localhost or a loopback IP.
func LoopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && LoopbackHost(u.Hostname())
}
