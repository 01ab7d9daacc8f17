package vfssvc

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// TestRevocations: revocations are stored and listed incrementally, and a
// replayed code, a reused refresh token and an RFC 7009 revocation each
// kill their grant, so that the grant's access tokens are refused too.
func TestRevocations(t *testing.T) {
	e := start(t, nil)
	o := accounts.NewOAuth(e.client)
	r := accounts.NewRevocations(e.client)
	c := ctx(t)
	acct := e.account(t)

	all, err := r.List(c, &accounts.RevocationListRequest{})
	wantCode(t, err, "")
	if len(all.Revocations) != 0 || all.Now.IsZero() {
		t.Fatalf("empty store: %+v", all)
	}
	_, err = r.Add(c, &accounts.RevocationAddRequest{Revocations: []accounts.Revocation{
		{Kind: accounts.RevokedToken, ID: "jti-1", Until: time.Now().Add(time.Hour)},
		{Kind: accounts.RevokedToken, ID: "jti-old", Until: time.Now().Add(-time.Minute)},
	}})
	wantCode(t, err, "")
	_, err = r.Add(c, &accounts.RevocationAddRequest{Revocations: []accounts.Revocation{{Kind: "session", ID: "x", Until: time.Now()}}})
	wantCode(t, err, wire.InvalidArgument)
	_, err = r.Add(c, &accounts.RevocationAddRequest{})
	wantCode(t, err, wire.InvalidArgument)

	ids := func(since time.Time) []string {
		t.Helper()
		l, err := r.List(c, &accounts.RevocationListRequest{Since: since})
		wantCode(t, err, "")
		var out []string
		for _, v := range l.Revocations {
			out = append(out, v.Kind+":"+v.ID)
		}
		return out
	}
	if got := ids(time.Time{}); !slices.Equal(got, []string{"token:jti-1"}) {
		t.Fatalf("revocations in force: %v", got)
	}
	later, err := r.List(c, &accounts.RevocationListRequest{})
	wantCode(t, err, "")

	// Each way a grant dies kills its access tokens.
	newCode := func(secret string) *accounts.OAuthCode {
		t.Helper()
		code := accounts.OAuthCode{Hash: accounts.HashKey(secret), ClientID: "client", AccountID: acct, RedirectURI: "http://127.0.0.1/cb",
			Scope: "mcp", Resource: "https://x/mcp", Challenge: "ch", Expires: time.Now().Add(time.Minute)}
		_, err := o.CreateCode(c, &code)
		wantCode(t, err, "")
		got, err := o.ConsumeCode(c, &accounts.OAuthCodeConsumeRequest{Hash: code.Hash})
		wantCode(t, err, "")
		return got
	}
	refresh := func(family, secret string) accounts.OAuthRefresh {
		return accounts.OAuthRefresh{Hash: accounts.HashKey(secret), Family: family, ClientID: "client", AccountID: acct,
			Scope: "mcp", Resource: "https://x/mcp", Expires: time.Now().Add(time.Hour)}
	}
	replayed := newCode("code-replayed")
	_, err = o.ConsumeCode(c, &accounts.OAuthCodeConsumeRequest{Hash: accounts.HashKey("code-replayed")})
	wantCode(t, err, wire.Unauthenticated)

	reused := uuid.NewString()
	r1 := refresh(reused, "r1")
	_, err = o.CreateRefresh(c, &r1)
	wantCode(t, err, "")
	_, err = o.RotateRefresh(c, &accounts.OAuthRefreshRotateRequest{Hash: r1.Hash, ClientID: "client", Next: refresh("", "r2")})
	wantCode(t, err, "")
	_, err = o.RotateRefresh(c, &accounts.OAuthRefreshRotateRequest{Hash: r1.Hash, ClientID: "client", Next: refresh("", "r3")})
	wantCode(t, err, wire.Unauthenticated)

	revoked := uuid.NewString()
	b1 := refresh(revoked, "b1")
	_, err = o.CreateRefresh(c, &b1)
	wantCode(t, err, "")
	_, err = o.RevokeRefresh(c, &accounts.OAuthRefreshRevokeRequest{Hash: b1.Hash, ClientID: "client"})
	wantCode(t, err, "")

	// A healthy grant is not killed.
	healthy := uuid.NewString()
	h1 := refresh(healthy, "h1")
	_, err = o.CreateRefresh(c, &h1)
	wantCode(t, err, "")
	_, err = o.RotateRefresh(c, &accounts.OAuthRefreshRotateRequest{Hash: h1.Hash, ClientID: "client", Next: refresh("", "h2")})
	wantCode(t, err, "")

	got := ids(later.Now)
	slices.Sort(got)
	want := []string{"grant:" + replayed.Family, "grant:" + reused, "grant:" + revoked}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("revocations since the first list: %v, want %v", got, want)
	}
}

// TestLoginAttempts: five failures per email are free, then each failure
// locks the email out twice as long; a success clears the email; another
// email from the same IP is not locked by them.
func TestLoginAttempts(t *testing.T) {
	e := start(t, nil)
	r := accounts.NewRevocations(e.client)
	c := ctx(t)
	attempt := func(email, ip string) int {
		t.Helper()
		resp, err := r.LoginAttempt(c, &accounts.LoginAttemptRequest{Email: email, IP: ip})
		wantCode(t, err, "")
		return resp.RetryAfterS
	}
	for i := range emailFreeFailures {
		if wait := attempt("Victim@example.com", "192.0.2.1"); wait != 0 {
			t.Fatalf("attempt %d refused (%d s)", i+1, wait)
		}
	}
	if wait := attempt("victim@example.com ", "192.0.2.2"); wait < 14 || wait > 15 {
		t.Fatalf("the sixth attempt, from another IP: wait %d s, want 15", wait)
	}
	if wait := attempt("other@example.com", "192.0.2.1"); wait != 0 {
		t.Errorf("another email from the same IP: wait %d s", wait)
	}
	// The lockout ends: the next failure doubles it.
	_, err := e.pool.Exec(c, `UPDATE oauth_login_attempts SET locked_until = now() WHERE key = 'email:victim@example.com'`)
	wantCode(t, err, "")
	if wait := attempt("victim@example.com", "192.0.2.1"); wait != 0 {
		t.Fatalf("an attempt after the lockout: wait %d s", wait)
	}
	if wait := attempt("victim@example.com", "192.0.2.1"); wait < 29 || wait > 30 {
		t.Errorf("after the sixth failure: wait %d s, want 30", wait)
	}
	// A success clears the email.
	_, err = r.LoginSucceeded(c, &accounts.LoginAttemptRequest{Email: "victim@example.com", IP: "192.0.2.1"})
	wantCode(t, err, "")
	if wait := attempt("victim@example.com", "192.0.2.1"); wait != 0 {
		t.Errorf("after a success: wait %d s", wait)
	}
	// An IP spraying many emails is locked after its own allowance.
	refused := 0
	for i := range ipFreeFailures + 1 {
		if attempt(uuid.NewString()+"@example.com", "198.51.100.7") > 0 {
			refused = i + 1
			break
		}
	}
	if refused != ipFreeFailures+1 {
		t.Errorf("the IP was refused at attempt %d, want %d", refused, ipFreeFailures+1)
	}
}

func TestLockout(t *testing.T) {
	for _, tc := range []struct {
		failures, free int
		want           time.Duration
	}{
		{0, 5, 0}, {4, 5, 0}, {5, 5, 15 * time.Second}, {6, 5, 30 * time.Second}, {7, 5, time.Minute},
		{13, 5, time.Hour}, {500, 5, time.Hour}, {19, 20, 0}, {20, 20, 15 * time.Second},
	} {
		if got := lockout(tc.failures, tc.free); got != tc.want {
			t.Errorf("lockout(%d, %d) = %s, want %s", tc.failures, tc.free, got, tc.want)
		}
	}
}

// TestLoginUnknownEmailHashes: a login for an unknown email, a disabled
// account or one without a password does the same argon2id check as a
// wrong password, so its timing says nothing (issue 15, finding 5).
func TestLoginUnknownEmailHashes(t *testing.T) {
	e := start(t, nil)
	a := accounts.NewAccounts(e.client)
	c := ctx(t)
	_, err := a.Create(c, &accounts.AccountCreateRequest{Email: "known@example.com", Password: "right horse"})
	wantCode(t, err, "")
	_, err = a.Create(c, &accounts.AccountCreateRequest{Email: "nopass@example.com"})
	wantCode(t, err, "")
	for _, email := range []string{"known@example.com", "unknown@example.com", "nopass@example.com"} {
		before := e.svc.passwordChecks.Load()
		_, err := a.Login(c, &accounts.AccountLoginRequest{Email: email, Password: "wrong"})
		wantCode(t, err, wire.Unauthenticated)
		if n := e.svc.passwordChecks.Load() - before; n != 1 {
			t.Errorf("login as %s ran %d password hashes, want 1", email, n)
		}
	}
}
