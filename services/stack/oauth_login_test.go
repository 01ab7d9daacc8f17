package stack

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/gateway"
	"github.com/mirobody/mirobody-go/services/servicetest"
)

// TestOAuthLoginLockout (issue 15, finding 5): five wrong passwords for an
// email are answered as such; the sixth attempt, even with the right
// password and on another gateway replica, is a 429 page that says how
// long to wait, with Retry-After. Another email is not locked by them.
func TestOAuthLoginLockout(t *testing.T) {
	d := startOAuthDev(t)
	const redirect = "http://127.0.0.1:9/callback"
	client := registerClient(t, d.Base, redirect)
	c2 := *d.Config
	c2.HTTPAddr = "127.0.0.1:0"
	gw2 := gateway.New(gateway.Options{Config: &c2, Log: servicetest.Logger(t)})
	startGroup(t, gw2)
	other := "http://" + gw2.Addr()

	// login posts one attempt from a fresh login page of base.
	login := func(base, email, password string) (*http.Response, string) {
		t.Helper()
		b := newUserAgent(t)
		_, ch := pkce()
		// The resource is the stack's public URL, whichever replica serves.
		resp, page := b.get(base + strings.TrimPrefix(authURL(d.Base, client, redirect, ch), d.Base))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("authorize: %d %s", resp.StatusCode, page)
		}
		form := formOf(t, page)
		form.Set("email", email)
		form.Set("password", password)
		return b.post(base+"/oauth/login", form)
	}
	for i := range 5 {
		if resp, page := login(d.Base, d.Email, "wrong password"); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(page, "Wrong email or password") {
			t.Fatalf("wrong password %d: %d %s", i+1, resp.StatusCode, page)
		}
	}
	for _, base := range []string{d.Base, other} {
		resp, page := login(base, strings.ToUpper(d.Email), d.Password)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
			!strings.Contains(page, "Too many attempts; try again in "+resp.Header.Get("Retry-After")+" s.") {
			t.Errorf("the sixth attempt on %s: %d Retry-After %q\n%s", base, resp.StatusCode, resp.Header.Get("Retry-After"), page)
		}
	}
	if resp, page := login(d.Base, "someone-else@example.com", "x"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("another email: %d %s", resp.StatusCode, page)
	}
}
