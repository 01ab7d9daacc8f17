package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/gateway/internal/authn"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Revocation sync (design.md "Revocation"): the revocations live in
// vfs-svc, and each replica keeps a copy it refreshes at most every
// revocationRefresh, so that checking a token costs a map lookup.
const (
	// revocationRefresh bounds how late this replica learns of a
	// revocation another replica stored (or vfs-svc made, on code or
	// refresh reuse) when the event did not reach it.
	revocationRefresh = 5 * time.Second
	// revocationMaxStale is how long a copy is trusted while vfs-svc
	// cannot be reached; past it, tokens are refused as unavailable.
	revocationMaxStale = time.Minute
	// revocationOverlap re-reads revocations stored shortly before the
	// last sync, so that one committed late is not missed.
	revocationOverlap = time.Minute
	// revocationSyncTimeout bounds one sync on the request path.
	revocationSyncTimeout = 2 * time.Second
)

// subjectTokenRevoked tells every gateway replica at once that a token or
// a grant was revoked (a accounts.Revocation); the periodic sync covers a
// missed event and replicas started later.
const subjectTokenRevoked = "events.gateway.token_revoked"

// revocations is this replica's copy of the revoked access tokens (by
// jti) and killed grants (by gid).
type revocations struct {
	store  *accounts.Revocations
	bus    *wire.Client
	tokens *authn.Revocations
	grants *authn.Revocations
	log    *slog.Logger
	now    func() time.Time

	mu sync.Mutex
	// cursor is the store's clock at the last sync; synced and checked
	// are this replica's clock at the last successful sync and attempt.
	cursor, synced, checked time.Time
	// due forces a sync at the next check (after a reuse was refused here).
	due bool
}

// newRevocations returns an empty copy that syncs from the store and
// listens to the revocation event on conn.
func newRevocations(bus *wire.Client, conn *nats.Conn, log *slog.Logger) (*revocations, error) {
	r := &revocations{store: accounts.NewRevocations(bus), bus: bus, tokens: authn.NewRevocations(), grants: authn.NewRevocations(),
		log: log, now: time.Now}
	if _, err := conn.Subscribe(subjectTokenRevoked, func(msg *nats.Msg) {
		var ev accounts.Revocation
		if json.Unmarshal(msg.Data, &ev) == nil {
			r.remember(ev)
		}
	}); err != nil {
		return nil, fmt.Errorf("subscribing to %s: %w", subjectTokenRevoked, err)
	}
	return r, nil
}

// remember adds one revocation to the copy.
func (r *revocations) remember(v accounts.Revocation) {
	switch v.Kind {
	case accounts.RevokedToken:
		r.tokens.Add(v.ID, v.Until)
	case accounts.RevokedGrant:
		r.grants.Add(v.ID, v.Until)
	}
}

// refused reports whether the token jti, issued from grant ("" for none),
// is revoked. A copy that cannot be brought up to date is an Unavailable
// error, never a pass: a restarted replica must not accept what was
// revoked before it started.
func (r *revocations) refused(ctx context.Context, jti, grant string) (bool, error) {
	if err := r.fresh(ctx); err != nil {
		return false, err
	}
	return r.tokens.Has(jti) || (grant != "" && r.grants.Has(grant)), nil
}

// fresh syncs the copy when it is due.
func (r *revocations) fresh(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if r.due || now.Sub(r.checked) >= revocationRefresh {
		r.checked = now
		if err := r.syncLocked(ctx); err != nil {
			r.log.WarnContext(ctx, "syncing token revocations failed", "err", err)
		}
	}
	if r.synced.IsZero() || now.Sub(r.synced) > revocationMaxStale {
		return wire.Errorf(wire.Unavailable, "token revocations are unavailable")
	}
	return nil
}

// syncLocked reads the revocations stored since the last sync.
func (r *revocations) syncLocked(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, revocationSyncTimeout)
	defer cancel()
	var since time.Time
	if !r.cursor.IsZero() {
		since = r.cursor.Add(-revocationOverlap)
	}
	resp, err := r.store.List(ctx, &accounts.RevocationListRequest{Since: since})
	if err != nil {
		return err
	}
	for _, v := range resp.Revocations {
		r.remember(v)
	}
	r.cursor, r.synced, r.due = resp.Now, r.now(), false
	return nil
}

// invalidate makes the next check sync: vfs-svc may just have killed a
// grant (a replayed code or a reused refresh token).
func (r *revocations) invalidate() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.due = true
}

// add stores revocations durably, then applies them here and tells the
// other replicas.
func (r *revocations) add(ctx context.Context, revs ...accounts.Revocation) error {
	if _, err := r.store.Add(ctx, &accounts.RevocationAddRequest{Revocations: revs}); err != nil {
		return fmt.Errorf("storing a revocation: %w", err)
	}
	for _, v := range revs {
		r.remember(v)
		if err := r.bus.Publish(ctx, subjectTokenRevoked, &v); err != nil {
			// Stored: the others learn it at their next sync.
			r.log.WarnContext(ctx, "announcing a revocation failed", "err", err)
		}
	}
	return nil
}
