package authn

import (
	"sync"
	"time"
)

// keyCacheTTL bounds how long a verified API key is trusted without asking
// vfs-svc again. Revocations also clear the cache at once through
// events.keys.revoked; the TTL covers a missed event.
const keyCacheTTL = 30 * time.Second

// keyCache remembers verified API keys by hash, so that a busy client costs
// one NATS round trip per TTL instead of one per request.
type keyCache struct {
	mu      sync.Mutex
	entries map[string]keyEntry
	now     func() time.Time
}

type keyEntry struct {
	p       *Principal
	expires time.Time
}

// newKeyCache returns an empty cache.
func newKeyCache() *keyCache {
	return &keyCache{entries: map[string]keyEntry{}, now: time.Now}
}

// get returns the principal cached for hash, if still fresh.
func (c *keyCache) get(hash string) (*Principal, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[hash]
	if !ok || c.now().After(e.expires) {
		delete(c.entries, hash)
		return nil, false
	}
	return e.p, true
}

// put caches p for hash. The cache is cleared when it grows past a bound
// rather than tracking recency: keys are few and re-verification is cheap.
func (c *keyCache) put(hash string, p *Principal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= 10_000 {
		clear(c.entries)
	}
	c.entries[hash] = keyEntry{p: p, expires: c.now().Add(keyCacheTTL)}
}

// reset forgets every key, after a revocation.
func (c *keyCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.entries)
}
