package oauth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strings"
	"time"

	"github.com/mirobody/mirobody-go/gateway/internal/authn"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Web app sessions (design.md "Web app sign-in"): the cookie is sealed
// like the login page's, so any replica opens it without a lookup, and
// sign-out stores its id as a revoked token, so it is refused everywhere
// from then on, through the same durable, synced set as access tokens.
const (
	// WebSessionCookie is the web app's session cookie.
	WebSessionCookie = "mirobody_web"
	// WebSessionTTL is how long a web app sign-in lasts.
	WebSessionTTL = 12 * time.Hour
	// webSessionPath scopes the cookie to the REST API: /mcp never sees it.
	webSessionPath  = "/api"
	purposeWeb      = "web session"
	webRevokePrefix = "web:"
)

// webSession is the sealed value of the web app's cookie. CSRF is the
// token state-changing requests must repeat in a header.
type webSession struct {
	ID        string `json:"i"`
	AccountID string `json:"a"`
	Email     string `json:"e"`
	CSRF      string `json:"c"`
	Expires   int64  `json:"x"`
}

// WebSession is a signed-in web app session.
type WebSession struct {
	// Cookie is the cookie to set on the browser.
	Cookie *http.Cookie
	// AccountID and Email name the account; CSRF is the token the app
	// sends back in the X-CSRF-Token header.
	AccountID, Email, CSRF string
}

// LockedOut is a password attempt refused by the rate limits or the
// lockout, for RetryAfter.
type LockedOut struct{ RetryAfter time.Duration }

// Error implements error.
func (e *LockedOut) Error() string { return "too many sign-in attempts, retry later" }

// checkPassword checks email and password with vfs-svc behind the same
// per-email budget and shared lockout counters as the login page.
func (o *Server) checkPassword(ctx context.Context, email, password, ip string) (*accounts.Account, error) {
	if wait, ok := o.limits.Allow("login:"+strings.ToLower(email), true); !ok {
		return nil, &LockedOut{RetryAfter: wait}
	}
	// The lockout counters are shared by every replica (design.md "Login
	// attempts"); the attempt counts as a failure until it succeeds.
	attempt := &accounts.LoginAttemptRequest{Email: email, IP: ip}
	gate, err := o.logins.LoginAttempt(ctx, attempt)
	if err != nil {
		return nil, err
	}
	if gate.RetryAfterS > 0 {
		return nil, &LockedOut{RetryAfter: time.Duration(gate.RetryAfterS) * time.Second}
	}
	acct, err := o.accounts.Login(ctx, &accounts.AccountLoginRequest{Email: email, Password: password})
	if err != nil {
		return nil, err
	}
	if _, err := o.logins.LoginSucceeded(ctx, attempt); err != nil {
		// The user is in; the email's failures fade after a day anyway.
		o.log.WarnContext(ctx, "clearing login failures failed", "err", err)
	}
	return acct, nil
}

// WebLogin signs a browser in to the web app with email and password (a
// wrong pair is Unauthenticated, too many attempts a *LockedOut).
func (o *Server) WebLogin(ctx context.Context, email, password, ip string) (*WebSession, error) {
	acct, err := o.checkPassword(ctx, strings.TrimSpace(email), password, ip)
	if err != nil {
		return nil, err
	}
	ws := &webSession{ID: randomToken(), AccountID: acct.ID, Email: acct.Email, CSRF: randomToken(),
		Expires: o.now().Add(WebSessionTTL).Unix()}
	v, err := o.box.seal(purposeWeb, ws, WebSessionTTL)
	if err != nil {
		return nil, err
	}
	return &WebSession{Cookie: o.webCookie(v, WebSessionTTL), AccountID: acct.ID, Email: acct.Email, CSRF: ws.CSRF}, nil
}

// VerifySession implements authn.SessionVerifier: the cookie's principal
// (scope api only) and its CSRF token.
func (o *Server) VerifySession(ctx context.Context, value string) (*authn.Principal, string, error) {
	ws, err := o.openWeb(ctx, value)
	if err != nil {
		return nil, "", err
	}
	return &authn.Principal{AccountID: ws.AccountID, Scopes: []string{"api"}, WebEmail: ws.Email}, ws.CSRF, nil
}

// WebLogout ends the session of cookie value on every replica, and
// returns the cookie that clears it from the browser.
func (o *Server) WebLogout(ctx context.Context, value string) (*http.Cookie, error) {
	ws, err := o.openWeb(ctx, value)
	if err != nil && !wire.IsCode(err, wire.Unauthenticated) {
		return nil, err
	}
	if ws != nil {
		until := time.Unix(ws.Expires, 0).Add(clockSkew)
		if err := o.tokens.revoked.add(ctx, accounts.Revocation{Kind: accounts.RevokedToken, ID: webRevokePrefix + ws.ID, Until: until}); err != nil {
			return nil, err
		}
	}
	return o.webCookie("", -time.Second), nil
}

// openWeb opens a cookie value and checks it was not signed out.
func (o *Server) openWeb(ctx context.Context, value string) (*webSession, error) {
	var ws webSession
	if o.box.open(purposeWeb, value, &ws) != nil {
		return nil, wire.Errorf(wire.Unauthenticated, "the web session is invalid or expired")
	}
	refused, err := o.tokens.revoked.refused(ctx, webRevokePrefix+ws.ID, "")
	if err != nil {
		return nil, err
	}
	if refused {
		return nil, wire.Errorf(wire.Unauthenticated, "the web session was signed out")
	}
	return &ws, nil
}

// webCookie is the web app's session cookie: HttpOnly, SameSite=Strict,
// Secure when the public URL is https, sent to /api only.
func (o *Server) webCookie(value string, ttl time.Duration) *http.Cookie {
	return &http.Cookie{Name: WebSessionCookie, Value: value, Path: webSessionPath, MaxAge: int(ttl.Seconds()),
		HttpOnly: true, Secure: o.secure, SameSite: http.SameSiteStrictMode}
}

// randomToken is 256 random bits, base64url.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
