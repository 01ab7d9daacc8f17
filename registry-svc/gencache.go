package registrysvc

import "sync"

// genCache is a per-account cache filled by loads that run outside its
// lock (a NATS round trip to vfs-svc) and emptied by change events. Each
// account has a generation, bumped on invalidation; a load stores its
// result only if the generation it started under is still current, so a
// read that was in flight when a change came cannot store what the change
// made stale (it would otherwise be served until the next event or TTL).
type genCache[V any] struct {
	mu   sync.Mutex
	vals map[string]V
	gens map[string]uint64
}

func newGenCache[V any]() *genCache[V] {
	return &genCache[V]{vals: map[string]V{}, gens: map[string]uint64{}}
}

// get returns the account's cached value, if any, and the generation a
// load of it starts under (to pass to put).
func (c *genCache[V]) get(account string) (v V, gen uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok = c.vals[account]
	return v, c.gens[account], ok
}

// put stores v for the account unless it was invalidated since gen was
// read, and reports whether it did.
func (c *genCache[V]) put(account string, gen uint64, v V) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gens[account] != gen {
		return false
	}
	c.vals[account] = v
	return true
}

// invalidate forgets the account's value, and what loads in flight read.
func (c *genCache[V]) invalidate(account string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.vals, account)
	c.gens[account]++
}
