package stack

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/gateway"
	"github.com/mirobody/mirobody-go/services/servicetest"
)

// TestOAuthRevocationDurable (issue 15, finding 6): revocations live in
// vfs-svc, so a token revoked at /oauth/revoke stays revoked on a gateway
// started afterwards (a restart, or a replica that missed the event), and
// a replayed code or a reused refresh token kills the access tokens
// already issued from that grant, on every replica.
func TestOAuthRevocationDurable(t *testing.T) {
	d := startOAuthDev(t)
	base := d.Base
	const redirect = "http://127.0.0.1:9/callback"
	client := registerClient(t, base, redirect)
	b := newUserAgent(t)
	signedIn := false
	// grant runs a fresh authorization and returns its code and verifier.
	grant := func() (code, verifier string) {
		t.Helper()
		v, ch := pkce()
		if !signedIn {
			signedIn = true
			return b.signIn(d, authURL(base, client, redirect, ch)).Query().Get("code"), v
		}
		resp, page := b.get(authURL(base, client, redirect, ch))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("authorize: %d %s", resp.StatusCode, page)
		}
		return b.allow(d, page).Query().Get("code"), v
	}
	exchange := func(code, verifier string) (int, map[string]any) {
		return postToken(t, base, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
			"redirect_uri": {redirect}, "client_id": {client}})
	}
	tokens := func() (access, refresh string) {
		t.Helper()
		st, tok := exchange(grant())
		if st != http.StatusOK {
			t.Fatalf("token: %d %v", st, tok)
		}
		return tok["access_token"].(string), tok["refresh_token"].(string)
	}
	works := func(gw, access string) bool {
		t.Helper()
		st, _ := callMyAccount(t, gw, "Authorization", "Bearer "+access)
		return st == http.StatusOK
	}
	replica := func() string {
		t.Helper()
		c := *d.Config
		c.HTTPAddr = "127.0.0.1:0"
		gw := gateway.New(gateway.Options{Config: &c, Log: servicetest.Logger(t)})
		startGroup(t, gw)
		return "http://" + gw.Addr()
	}
	// A second replica that is up through everything below.
	other := replica()

	// Refresh reuse: both access tokens of the grant die, here and on the
	// other replica.
	a1, r1 := tokens()
	st, tok := postToken(t, base, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r1}, "client_id": {client}})
	if st != http.StatusOK {
		t.Fatalf("refresh: %d %v", st, tok)
	}
	a2 := tok["access_token"].(string)
	if !works(base, a1) || !works(other, a2) {
		t.Fatal("fresh access tokens refused")
	}
	if st, m := postToken(t, base, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r1}, "client_id": {client}}); st != http.StatusBadRequest {
		t.Fatalf("reused refresh token: %d %v", st, m)
	}
	for _, a := range []string{a1, a2} {
		if works(base, a) {
			t.Error("an access token of a grant whose refresh token was reused still works on the replica that saw the reuse")
		}
	}
	servicetest.Eventually(t, 10*time.Second, func() bool { return !works(other, a1) && !works(other, a2) },
		"the other replica still accepts access tokens of a killed grant")

	// Code replay: the access token the code bought dies.
	code, verifier := grant()
	st, tok = exchange(code, verifier)
	if st != http.StatusOK {
		t.Fatalf("token: %d %v", st, tok)
	}
	a3 := tok["access_token"].(string)
	if !works(base, a3) {
		t.Fatal("fresh access token refused")
	}
	if st, m := exchange(code, verifier); st != http.StatusBadRequest {
		t.Fatalf("replayed code: %d %v", st, m)
	}
	if works(base, a3) {
		t.Error("the access token of a replayed code still works")
	}

	// RFC 7009: a revoked access token stays revoked on a gateway started
	// after the revocation; an unrevoked one still works there.
	a4, _ := tokens()
	a5, _ := tokens()
	resp, err := http.PostForm(base+"/oauth/revoke", url.Values{"token": {a4}, "client_id": {client}})
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
	if works(base, a4) || works(other, a4) {
		t.Error("a revoked access token still works")
	}
	restarted := replica()
	if works(restarted, a4) {
		t.Error("a revoked access token works on a gateway started after the revocation")
	}
	if !works(restarted, a5) {
		t.Error("an unrevoked access token is refused on a gateway started later")
	}
}
