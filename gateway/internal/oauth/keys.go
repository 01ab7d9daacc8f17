package oauth

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mirobody/mirobody-go/services/seal"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
)

// Signing key lifecycle. A key signs for keyRotateEvery, then stays in the
// JWKS until keyDropAfter so that tokens it signed (1 hour at most) still
// verify everywhere.
const (
	keyRotateEvery = 7 * 24 * time.Hour
	keyDropAfter   = keyRotateEvery + 24*time.Hour
	// keyRecheck bounds how often an unknown kid or a due rotation makes a
	// replica ask vfs-svc again, so that junk tokens cannot flood it.
	keyRecheck = 10 * time.Second
	// jwksRefresh bounds how stale the served JWKS may be.
	jwksRefresh = 5 * time.Minute
)

// signingKeys holds the Ed25519 keys of the token issuer. With a store,
// keys live in vfs-svc sealed under a key derived from SECRET_KEY and every
// replica signs with the newest; without one (no SECRET_KEY) a key is made
// in memory, valid on this replica until it restarts.
type signingKeys struct {
	store *accounts.OAuth
	box   *seal.Box
	log   *slog.Logger
	now   func() time.Time

	mu      sync.Mutex
	current *privateKey
	public  map[string]ed25519.PublicKey
	// order is the kids of public, newest first (the JWKS order).
	order   []string
	loaded  time.Time
	checked time.Time
}

type privateKey struct {
	kid     string
	key     ed25519.PrivateKey
	created time.Time
}

// newSigningKeys returns the key set; secret "" means memory only.
func newSigningKeys(store *accounts.OAuth, secret string, log *slog.Logger) (*signingKeys, error) {
	k := &signingKeys{log: log, now: time.Now, public: map[string]ed25519.PublicKey{}}
	if secret == "" {
		return k, nil
	}
	box, err := seal.Derive([]byte(secret), "mirobody oauth signing keys v1")
	if err != nil {
		return nil, err
	}
	k.box = box
	k.store = store
	return k, nil
}

// thumbprint is the RFC 7638 JWK thumbprint of an Ed25519 public key, used
// as its kid: stable, and the same on every replica.
func thumbprint(pub ed25519.PublicKey) string {
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// signer returns the key to sign with, rotating it when due.
func (k *signingKeys) signer(ctx context.Context) (*privateKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	due := k.current == nil || now.Sub(k.current.created) >= keyRotateEvery
	if due && (k.current == nil || now.Sub(k.checked) >= keyRecheck) {
		k.checked = now
		if err := k.rotateLocked(ctx, false); err != nil {
			if k.current == nil {
				return nil, err
			}
			k.log.WarnContext(ctx, "rotating the token signing key failed; signing with the old one", "err", err)
		}
	}
	return k.current, nil
}

// rotateLocked makes a candidate key and adopts the store's newest.
func (k *signingKeys) rotateLocked(ctx context.Context, force bool) error {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("generating a signing key: %w", err)
	}
	kid := thumbprint(pub)
	if k.store == nil {
		k.current = &privateKey{kid: kid, key: priv, created: k.now()}
		k.public[kid] = pub
		k.order = append([]string{kid}, k.order...)
		k.loaded = k.now()
		return nil
	}
	sealed := k.box.Seal(priv.Seed(), []byte(kid))
	resp, err := k.store.RotateKeys(ctx, &accounts.SigningKeyRotateRequest{
		Candidate: accounts.SigningKey{ID: kid, Alg: "EdDSA", Public: pub, SealedPrivate: sealed},
		MaxAgeS:   int(keyRotateEvery.Seconds()), DropAfterS: int(keyDropAfter.Seconds()), Force: force})
	if err != nil {
		return fmt.Errorf("storing the signing key: %w", err)
	}
	err = k.adoptLocked(resp.Keys)
	if errors.Is(err, errUnsealable) && !force {
		k.log.WarnContext(ctx, "the newest token signing key cannot be opened (was SECRET_KEY changed?); making a new one")
		return k.rotateLocked(ctx, true)
	}
	return err
}

var errUnsealable = errors.New("the signing key cannot be opened with this SECRET_KEY")

// adoptLocked replaces the key set by keys (newest first) from the store.
func (k *signingKeys) adoptLocked(keys []accounts.SigningKey) error {
	public := map[string]ed25519.PublicKey{}
	var order []string
	for _, sk := range keys {
		if sk.Alg != "EdDSA" || len(sk.Public) != ed25519.PublicKeySize {
			continue
		}
		public[sk.ID] = ed25519.PublicKey(sk.Public)
		order = append(order, sk.ID)
	}
	k.public, k.order, k.loaded = public, order, k.now()
	if len(keys) == 0 {
		return errors.New("the store holds no signing key")
	}
	newest := keys[0]
	if k.current != nil && k.current.kid == newest.ID {
		return nil
	}
	seed, err := k.box.Open(newest.SealedPrivate, []byte(newest.ID))
	if err != nil || len(seed) != ed25519.SeedSize {
		return errUnsealable
	}
	k.current = &privateKey{kid: newest.ID, key: ed25519.NewKeyFromSeed(seed), created: newest.Created}
	return nil
}

// publicKey returns the key named kid, asking the store again (at most
// every keyRecheck) when it is unknown: another replica may have rotated.
func (k *signingKeys) publicKey(ctx context.Context, kid string) (ed25519.PublicKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if pub, ok := k.public[kid]; ok {
		return pub, nil
	}
	if k.store == nil || k.now().Sub(k.loaded) < keyRecheck {
		return nil, errUnknownKey
	}
	if err := k.reloadLocked(ctx); err != nil {
		return nil, err
	}
	if pub, ok := k.public[kid]; ok {
		return pub, nil
	}
	return nil, errUnknownKey
}

var errUnknownKey = errors.New("unknown signing key")

func (k *signingKeys) reloadLocked(ctx context.Context) error {
	resp, err := k.store.ListKeys(ctx, &accounts.SigningKeyListRequest{})
	if err != nil {
		k.loaded = k.now() // a failing store is asked again after keyRecheck only
		return fmt.Errorf("listing signing keys: %w", err)
	}
	if err := k.adoptLocked(resp.Keys); err != nil && !errors.Is(err, errUnsealable) {
		return err
	}
	return nil
}

// jwk is one RFC 8037 OKP public key.
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
}

// jwks returns the public keys, newest first, refreshing a stale copy.
func (k *signingKeys) jwks(ctx context.Context) ([]jwk, error) {
	if _, err := k.signer(ctx); err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.store != nil && k.now().Sub(k.loaded) >= jwksRefresh {
		if err := k.reloadLocked(ctx); err != nil {
			k.log.WarnContext(ctx, "refreshing the JWKS failed; serving the known keys", "err", err)
		}
	}
	out := make([]jwk, 0, len(k.order))
	for _, kid := range k.order {
		out = append(out, jwk{Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(k.public[kid]), Kid: kid, Use: "sig", Alg: "EdDSA"})
	}
	return out, nil
}
