package vfssvc

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

func TestOAuthSigningKeys(t *testing.T) {
	e := start(t, nil)
	o := accounts.NewOAuth(e.client)
	c := ctx(t)
	cand := func(id string) accounts.SigningKey {
		return accounts.SigningKey{ID: id, Alg: "EdDSA", Public: make([]byte, 32), SealedPrivate: []byte("sealed " + id)}
	}
	rotate := func(id string, force bool) []accounts.SigningKey {
		t.Helper()
		r, err := o.RotateKeys(c, &accounts.SigningKeyRotateRequest{Candidate: cand(id), MaxAgeS: 3600, DropAfterS: 7200, Force: force})
		wantCode(t, err, "")
		return r.Keys
	}
	if keys := rotate("k1", false); len(keys) != 1 || keys[0].ID != "k1" || string(keys[0].SealedPrivate) != "sealed k1" {
		t.Fatalf("first rotation: %+v", keys)
	}
	// A second replica's candidate loses to the fresh key.
	if keys := rotate("k2", false); len(keys) != 1 || keys[0].ID != "k1" {
		t.Fatalf("fresh key replaced: %+v", keys)
	}
	if keys := rotate("k3", true); len(keys) != 2 || keys[0].ID != "k3" {
		t.Fatalf("forced rotation: %+v", keys)
	}
	// An old key is replaced, and a very old one dropped.
	_, err := e.pool.Exec(c, `UPDATE oauth_signing_keys SET created = now() - interval '3 hours' WHERE id = 'k1'`)
	wantCode(t, err, "")
	_, err = e.pool.Exec(c, `UPDATE oauth_signing_keys SET created = now() - interval '90 minutes' WHERE id = 'k3'`)
	wantCode(t, err, "")
	keys := rotate("k4", false)
	if len(keys) != 2 || keys[0].ID != "k4" || keys[1].ID != "k3" {
		t.Fatalf("due rotation: %+v", keys)
	}
	l, err := o.ListKeys(c, &accounts.SigningKeyListRequest{})
	wantCode(t, err, "")
	if len(l.Keys) != 2 {
		t.Errorf("list: %+v", l.Keys)
	}
	_, err = o.RotateKeys(c, &accounts.SigningKeyRotateRequest{Candidate: accounts.SigningKey{ID: "x"}, MaxAgeS: 1, DropAfterS: 2})
	wantCode(t, err, wire.InvalidArgument)
}

func TestOAuthCodesAndRefresh(t *testing.T) {
	e := start(t, nil)
	o := accounts.NewOAuth(e.client)
	c := ctx(t)
	acct := e.account(t)
	code := accounts.OAuthCode{Hash: accounts.HashKey("code-1"), ClientID: "client", AccountID: acct, RedirectURI: "http://127.0.0.1/cb",
		Scope: "mcp", Resource: "https://x/mcp", Challenge: "ch", Expires: time.Now().Add(time.Minute)}
	_, err := o.CreateCode(c, &code)
	wantCode(t, err, "")
	got, err := o.ConsumeCode(c, &accounts.OAuthCodeConsumeRequest{Hash: code.Hash})
	wantCode(t, err, "")
	if got.ClientID != "client" || got.Challenge != "ch" || got.AccountID != acct || got.Family == "" {
		t.Fatalf("consumed code: %+v", got)
	}
	refresh := func(secret string) accounts.OAuthRefresh {
		return accounts.OAuthRefresh{Hash: accounts.HashKey(secret), Family: got.Family, ClientID: "client", AccountID: acct,
			Scope: "mcp", Resource: got.Resource, Expires: time.Now().Add(time.Hour)}
	}
	r1 := refresh("r1")
	_, err = o.CreateRefresh(c, &r1)
	wantCode(t, err, "")

	// A replayed code is refused and revokes the refresh family it issued.
	_, err = o.ConsumeCode(c, &accounts.OAuthCodeConsumeRequest{Hash: code.Hash})
	wantCode(t, err, wire.Unauthenticated)
	_, err = o.RotateRefresh(c, &accounts.OAuthRefreshRotateRequest{Hash: r1.Hash, ClientID: "client", Next: refresh("r2")})
	wantCode(t, err, wire.Unauthenticated)

	// A fresh family rotates; reusing a spent token revokes the family.
	family := uuid.NewString()
	a := refresh("a1")
	a.Family = family
	_, err = o.CreateRefresh(c, &a)
	wantCode(t, err, "")
	_, err = o.RotateRefresh(c, &accounts.OAuthRefreshRotateRequest{Hash: a.Hash, ClientID: "other", Next: refresh("a2")})
	wantCode(t, err, wire.Unauthenticated)
	old, err := o.RotateRefresh(c, &accounts.OAuthRefreshRotateRequest{Hash: a.Hash, ClientID: "client", Next: refresh("a2")})
	wantCode(t, err, "")
	if old.Family != family || old.Scope != "mcp" {
		t.Errorf("rotated grant: %+v", old)
	}
	_, err = o.RotateRefresh(c, &accounts.OAuthRefreshRotateRequest{Hash: a.Hash, ClientID: "client", Next: refresh("a3")})
	wantCode(t, err, wire.Unauthenticated)
	_, err = o.RotateRefresh(c, &accounts.OAuthRefreshRotateRequest{Hash: accounts.HashKey("a2"), ClientID: "client", Next: refresh("a4")})
	wantCode(t, err, wire.Unauthenticated) // the reuse revoked a2 too

	// Revocation (RFC 7009): unknown tokens are fine, known ones die.
	b := refresh("b1")
	b.Family = uuid.NewString()
	_, err = o.CreateRefresh(c, &b)
	wantCode(t, err, "")
	_, err = o.RevokeRefresh(c, &accounts.OAuthRefreshRevokeRequest{Hash: accounts.HashKey("nope")})
	wantCode(t, err, "")
	_, err = o.RevokeRefresh(c, &accounts.OAuthRefreshRevokeRequest{Hash: b.Hash, ClientID: "client"})
	wantCode(t, err, "")
	_, err = o.RotateRefresh(c, &accounts.OAuthRefreshRotateRequest{Hash: b.Hash, ClientID: "client", Next: refresh("b2")})
	wantCode(t, err, wire.Unauthenticated)

	// Expired codes are refused.
	exp := code
	exp.Hash = accounts.HashKey("code-2")
	_, err = o.CreateCode(c, &exp)
	wantCode(t, err, "")
	_, err = e.pool.Exec(c, `UPDATE oauth_codes SET expires = now() - interval '1 second' WHERE hash = $1`, exp.Hash)
	wantCode(t, err, "")
	_, err = o.ConsumeCode(c, &accounts.OAuthCodeConsumeRequest{Hash: exp.Hash})
	wantCode(t, err, wire.Unauthenticated)

	// Dynamic registration.
	cl, err := o.RegisterClient(c, &accounts.OAuthClient{Name: "Tool", RedirectURIs: []string{"http://127.0.0.1/cb"}})
	wantCode(t, err, "")
	back, err := o.GetClient(c, &accounts.OAuthClientGetRequest{ID: cl.ID})
	wantCode(t, err, "")
	if back.Name != "Tool" || len(back.RedirectURIs) != 1 {
		t.Errorf("client: %+v", back)
	}
	_, err = o.GetClient(c, &accounts.OAuthClientGetRequest{ID: "nope"})
	wantCode(t, err, wire.NotFound)
	_, err = o.RegisterClient(c, &accounts.OAuthClient{Name: "x"})
	wantCode(t, err, wire.InvalidArgument)
}
