package oauth

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// fakeRevocationStore serves vfs.oauth.revocations.list from a slice, and
// can be taken down.
type fakeRevocationStore struct {
	mu   sync.Mutex
	revs []accounts.Revocation
	down bool
}

func (f *fakeRevocationStore) list(_ context.Context, _ *accounts.RevocationListRequest) (*accounts.RevocationListResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return nil, wire.Errorf(wire.Unavailable, "down")
	}
	return &accounts.RevocationListResponse{Revocations: slices.Clone(f.revs), Now: time.Now()}, nil
}

func (f *fakeRevocationStore) set(down bool, revs ...accounts.Revocation) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
	f.revs = append(f.revs, revs...)
}

// TestRevocationsSync: a replica refuses revoked tokens and tokens of
// killed grants from the store, learns new ones within revocationRefresh
// (or at once after invalidate), trusts its copy for revocationMaxStale
// while the store is down, and never accepts a token before its first
// sync succeeded.
func TestRevocationsSync(t *testing.T) {
	url := servicetest.NATS(t)
	store := &fakeRevocationStore{down: true}
	svc, err := wire.NewService(servicetest.Conn(t, url), wire.ServiceOptions{Name: "vfs", Version: "0.0.1", Log: servicetest.Logger(t)})
	must(t, err)
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	must(t, wire.Serve(svc, accounts.OAuthRevocationsList, store.list))

	r, err := newRevocations(servicetest.Client(t, url), servicetest.Conn(t, url), servicetest.Logger(t))
	must(t, err)
	now := time.Now()
	r.now = func() time.Time { return now }
	ctx := context.Background()
	check := func(jti, grant string, want bool, wantErr wire.Code) {
		t.Helper()
		got, err := r.refused(ctx, jti, grant)
		if wantErr != "" {
			if !wire.IsCode(err, wantErr) {
				t.Fatalf("refused(%q, %q): %v, want %s", jti, grant, err, wantErr)
			}
			return
		}
		if err != nil || got != want {
			t.Fatalf("refused(%q, %q) = %v, %v; want %v", jti, grant, got, err, want)
		}
	}

	// Before the first sync nothing passes.
	check("j0", "", false, wire.Unavailable)
	store.set(false, accounts.Revocation{Kind: accounts.RevokedToken, ID: "j1", Until: now.Add(time.Hour)},
		accounts.Revocation{Kind: accounts.RevokedGrant, ID: "g1", Until: now.Add(time.Hour)})
	now = now.Add(revocationRefresh)
	check("j1", "", true, "")
	check("j2", "g1", true, "")
	check("j2", "g2", false, "")

	// A revocation stored elsewhere is seen at the next refresh, or at
	// once after invalidate.
	store.set(false, accounts.Revocation{Kind: accounts.RevokedGrant, ID: "g2", Until: now.Add(time.Hour)})
	check("j2", "g2", false, "")
	now = now.Add(revocationRefresh)
	check("j2", "g2", true, "")
	store.set(false, accounts.Revocation{Kind: accounts.RevokedToken, ID: "j3", Until: now.Add(time.Hour)})
	r.invalidate()
	check("j3", "", true, "")

	// The store goes down: the copy serves until it is too stale.
	store.set(true)
	now = now.Add(revocationRefresh)
	check("j4", "", false, "")
	check("j3", "", true, "")
	now = now.Add(revocationMaxStale)
	check("j4", "", false, wire.Unavailable)
}
