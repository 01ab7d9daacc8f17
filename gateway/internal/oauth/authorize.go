package oauth

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/mirobody/mirobody-go/gateway/internal/authn"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Purposes of sealed page values.
const (
	purposeRequest = "authorization request"
	purposeSession = "login session"
)

// authRequest is a checked authorization request. The login and consent
// pages carry it sealed, so the forms cannot alter it and no replica has
// to remember it.
type authRequest struct {
	ClientID    string `json:"c"`
	ClientName  string `json:"n"`
	Document    bool   `json:"d,omitempty"`
	RedirectURI string `json:"r"`
	Scope       string `json:"s"`
	State       string `json:"st,omitempty"`
	Challenge   string `json:"ch"`
	Resource    string `json:"res"`
}

// loginSession is the sealed value of the session cookie.
type loginSession struct {
	AccountID string `json:"a"`
	Email     string `json:"e"`
}

// challengeRe is a base64url SHA-256 digest (RFC 7636 §4.2).
var challengeRe = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// authzError is a failed authorization request. Before the client and its
// redirect URI are trusted it is shown on a page; after, it goes back to
// the client (RFC 6749 §4.1.2.1).
type authzError struct {
	page bool
	code string
	desc string
}

// checkAuthorize validates the query of GET /oauth/authorize.
func (o *Server) checkAuthorize(c echo.Context) (*authRequest, *authzError) {
	q := c.QueryParams()
	for k, v := range q {
		if len(v) > 1 {
			return nil, &authzError{page: true, desc: "parameter " + k + " is repeated"}
		}
	}
	cl, err := o.clients.resolve(c.Request().Context(), q.Get("client_id"))
	if errors.Is(err, errUnknownClient) {
		return nil, &authzError{page: true, desc: "The application is not registered here (unknown client_id)."}
	}
	if err != nil {
		o.log.ErrorContext(c.Request().Context(), "resolving an OAuth client failed", "err", err)
		return nil, &authzError{page: true, desc: "The sign-in service is unavailable; try again later."}
	}
	redirect := q.Get("redirect_uri")
	if redirect == "" && len(cl.RedirectURIs) == 1 {
		redirect = cl.RedirectURIs[0]
	}
	if !redirectAllowed(cl.RedirectURIs, redirect) {
		return nil, &authzError{page: true, desc: "The redirect_uri is not one the application registered."}
	}
	ar := &authRequest{ClientID: cl.ID, ClientName: cl.Name, Document: cl.Document, RedirectURI: redirect, State: q.Get("state")}
	if cl.Name == "" {
		ar.ClientName = "An unnamed application"
	}
	if rt := q.Get("response_type"); rt != "code" {
		return ar, &authzError{code: "unsupported_response_type", desc: "response_type must be code"}
	}
	if q.Get("code_challenge_method") != "S256" || !challengeRe.MatchString(q.Get("code_challenge")) {
		return ar, &authzError{code: "invalid_request", desc: "PKCE is required: code_challenge with code_challenge_method S256"}
	}
	ar.Challenge = q.Get("code_challenge")
	scopes, err := parseScope(q.Get("scope"))
	if err != nil {
		return ar, &authzError{code: "invalid_scope", desc: err.Error()}
	}
	ar.Scope = strings.Join(scopes, " ")
	res, ok := o.resource(q.Get("resource"))
	if !ok {
		return ar, &authzError{code: "invalid_target", desc: "resource must be " + o.tokens.resource}
	}
	ar.Resource = res
	return ar, nil
}

// resource checks an RFC 8707 resource parameter: this gateway's /mcp is
// the one protected resource ("" means it).
func (o *Server) resource(r string) (string, bool) {
	if r == "" || strings.TrimRight(r, "/") == o.tokens.resource {
		return o.tokens.resource, true
	}
	return "", false
}

// authorize answers GET /oauth/authorize: the login page, or the consent
// page for a browser already signed in.
func (o *Server) authorize(c echo.Context) error {
	ar, fail := o.checkAuthorize(c)
	if fail != nil {
		if fail.page {
			return errorPage(c, http.StatusBadRequest, fail.desc)
		}
		return o.redirectBack(c, http.StatusFound, ar, url.Values{"error": {fail.code}, "error_description": {fail.desc}})
	}
	if sess := o.session(c); sess != nil {
		return o.consentPage(c, ar, sess)
	}
	return o.loginPage(c, http.StatusOK, ar, "", "")
}

func (o *Server) loginPage(c echo.Context, status int, ar *authRequest, email, msg string) error {
	sealed, err := o.box.seal(purposeRequest, ar, requestTTL)
	if err != nil {
		return err
	}
	return render(c, status, pageData{Page: "login", Title: "Sign in", Request: sealed, CSRF: o.csrfToken(c),
		Client: ar.ClientName, Email: email, Error: msg})
}

func (o *Server) consentPage(c echo.Context, ar *authRequest, sess *loginSession) error {
	sealed, err := o.box.seal(purposeRequest, ar, requestTTL)
	if err != nil {
		return err
	}
	d := pageData{Page: "consent", Title: "Allow access", Request: sealed, CSRF: o.csrfToken(c), Client: ar.ClientName,
		Verified: ar.Document, Email: sess.Email, RedirectHost: redirectHost(ar.RedirectURI)}
	if ar.Document {
		if u, err := url.Parse(ar.ClientID); err == nil {
			d.ClientHost = u.Host
		}
	}
	for _, s := range strings.Fields(ar.Scope) {
		d.Scopes = append(d.Scopes, scopeDescriptions[s])
	}
	return render(c, http.StatusOK, d)
}

// redirectHost names where a redirect URI leads, for the consent page.
func redirectHost(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return uri
	}
	if u.Host != "" {
		return u.Host
	}
	return u.Scheme + ":"
}

// session returns the browser's login session, if any.
func (o *Server) session(c echo.Context) *loginSession {
	ck, err := c.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	var s loginSession
	if o.box.open(purposeSession, ck.Value, &s) != nil {
		return nil
	}
	return &s
}

// formRequest checks a page form's CSRF token and opens its request.
func (o *Server) formRequest(c echo.Context) (*authRequest, error) {
	if !csrfValid(c) {
		return nil, errorPage(c, http.StatusForbidden, "This form is not valid any more (CSRF check failed). Go back to the application and start again.")
	}
	var ar authRequest
	if o.box.open(purposeRequest, c.FormValue("request"), &ar) != nil {
		return nil, errorPage(c, http.StatusBadRequest, "This sign-in request has expired. Go back to the application and start again.")
	}
	return &ar, nil
}

// login answers POST /oauth/login: email and password, checked by vfs-svc.
func (o *Server) login(c echo.Context) error {
	ar, err := o.formRequest(c)
	if ar == nil {
		return err
	}
	ctx := c.Request().Context()
	email := strings.TrimSpace(c.FormValue("email"))
	acct, err := o.checkPassword(ctx, email, c.FormValue("password"), authn.ClientIP(c.Request()))
	var locked *LockedOut
	if errors.As(err, &locked) {
		c.Response().Header().Set("Retry-After", authn.RetryAfter(locked.RetryAfter))
		return o.loginPage(c, http.StatusTooManyRequests, ar, email,
			fmt.Sprintf("Too many attempts; try again in %s s.", authn.RetryAfter(locked.RetryAfter)))
	}
	if wire.IsCode(err, wire.Unauthenticated) {
		return o.loginPage(c, http.StatusUnauthorized, ar, email, "Wrong email or password.")
	}
	if err != nil {
		return err
	}
	sess := &loginSession{AccountID: acct.ID, Email: acct.Email}
	v, err := o.box.seal(purposeSession, sess, loginTTL)
	if err != nil {
		return err
	}
	o.setCookie(c, sessionCookie, v, loginTTL)
	return o.consentPage(c, ar, sess)
}

// consent answers POST /oauth/consent: allow issues a code, deny tells the
// client so; both go back to its redirect URI with iss (RFC 9207).
func (o *Server) consent(c echo.Context) error {
	ar, err := o.formRequest(c)
	if ar == nil {
		return err
	}
	sess := o.session(c)
	if sess == nil {
		return o.loginPage(c, http.StatusUnauthorized, ar, "", "Your sign-in expired; sign in again.")
	}
	if c.FormValue("action") != "allow" {
		return o.redirectBack(c, http.StatusSeeOther, ar, url.Values{"error": {"access_denied"}, "error_description": {"the user denied access"}})
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	code := base64.RawURLEncoding.EncodeToString(raw)
	if _, err := o.store.CreateCode(c.Request().Context(), &accounts.OAuthCode{Hash: accounts.HashKey(code), ClientID: ar.ClientID,
		AccountID: sess.AccountID, RedirectURI: ar.RedirectURI, Scope: ar.Scope, Resource: ar.Resource,
		Challenge: ar.Challenge, Expires: o.now().Add(codeTTL)}); err != nil {
		return err
	}
	return o.redirectBack(c, http.StatusSeeOther, ar, url.Values{"code": {code}})
}

// redirectBack sends the browser to the client's redirect URI with params,
// the state and the issuer added to its query.
func (o *Server) redirectBack(c echo.Context, status int, ar *authRequest, params url.Values) error {
	u, err := url.Parse(ar.RedirectURI)
	if err != nil {
		return errorPage(c, http.StatusBadRequest, "The redirect_uri is not valid.")
	}
	q := u.Query()
	for k, v := range params {
		q[k] = v
	}
	if ar.State != "" {
		q.Set("state", ar.State)
	}
	q.Set("iss", o.issuer)
	u.RawQuery = q.Encode()
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.Redirect(status, u.String())
}
