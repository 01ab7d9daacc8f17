package authn

import (
	"sync"
	"time"
)

// Revocations remembers revoked credentials (MCP session nonces ended by
// DELETE; access-token ids and grants, copied from vfs-svc by the
// authorization server) until they would have expired anyway, which
// bounds the set by the revocation rate times the lifetime. The set is
// this replica's memory: filling it from a durable store, where needed,
// is the owner's job (see design.md "Revocation").
type Revocations struct {
	mu  sync.Mutex
	m   map[string]time.Time
	now func() time.Time
}

// NewRevocations returns an empty set.
func NewRevocations() *Revocations {
	return &Revocations{m: map[string]time.Time{}, now: time.Now}
}

// Add revokes the credential with id nonce until the given time.
func (r *Revocations) Add(nonce string, until time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if len(r.m) > 1000 {
		for k, u := range r.m {
			if now.After(u) {
				delete(r.m, k)
			}
		}
	}
	r.m[nonce] = until
}

// Has reports whether the credential with id nonce is revoked.
func (r *Revocations) Has(nonce string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	until, ok := r.m[nonce]
	return ok && r.now().Before(until)
}
