package oauth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"regexp"
	"strings"

	"github.com/golang-jwt/jwt/v5"
	"github.com/labstack/echo/v4"

	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// refreshPrefix starts every refresh token, so that a leaked one is easy
// to recognise (secret scanners) and never mistaken for an API key.
const refreshPrefix = "mbr_"

// verifierRe is an RFC 7636 §4.1 code verifier.
var verifierRe = regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`)

// tokenResponse is the RFC 6749 §5.1 success body.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
}

// token answers POST /oauth/token for the two grants served.
func (o *Server) token(c echo.Context) error {
	if !strings.HasPrefix(c.Request().Header.Get(echo.HeaderContentType), echo.MIMEApplicationForm) {
		return oauthFail(c, http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded")
	}
	switch c.FormValue("grant_type") {
	case "authorization_code":
		return o.codeGrant(c)
	case "refresh_token":
		return o.refreshGrant(c)
	case "":
		return oauthFail(c, http.StatusBadRequest, "invalid_request", "grant_type is required")
	default:
		return oauthFail(c, http.StatusBadRequest, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
	}
}

// clientID is the public client's id, from the form or, for clients that
// send it as HTTP Basic user name, from there (there is no secret to check).
func clientID(c echo.Context) string {
	if id := c.FormValue("client_id"); id != "" {
		return id
	}
	if user, _, ok := c.Request().BasicAuth(); ok {
		return user
	}
	return ""
}

func (o *Server) codeGrant(c echo.Context) error {
	ctx := c.Request().Context()
	code, redirect, verifier, client := c.FormValue("code"), c.FormValue("redirect_uri"), c.FormValue("code_verifier"), clientID(c)
	if code == "" || redirect == "" || verifier == "" || client == "" {
		return oauthFail(c, http.StatusBadRequest, "invalid_request", "code, redirect_uri, code_verifier and client_id are required")
	}
	// The code is spent by this first use whatever follows: a failed
	// attempt cannot be retried with another verifier.
	grant, err := o.store.ConsumeCode(ctx, &accounts.OAuthCodeConsumeRequest{Hash: accounts.HashKey(code)})
	if wire.IsCode(err, wire.Unauthenticated) {
		// A replay makes vfs-svc kill the grant: learn it at once.
		o.tokens.revoked.invalidate()
		return oauthFail(c, http.StatusBadRequest, "invalid_grant", "the authorization code is invalid, expired or already used")
	}
	if err != nil {
		return err
	}
	if grant.ClientID != client {
		return oauthFail(c, http.StatusBadRequest, "invalid_grant", "the authorization code was issued to another client")
	}
	if grant.RedirectURI != redirect {
		return oauthFail(c, http.StatusBadRequest, "invalid_grant", "redirect_uri does not match the authorization request")
	}
	sum := sha256.Sum256([]byte(verifier))
	if !verifierRe.MatchString(verifier) || subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(grant.Challenge)) != 1 {
		return oauthFail(c, http.StatusBadRequest, "invalid_grant", "PKCE verification failed: code_verifier does not match code_challenge")
	}
	if r := c.FormValue("resource"); r != "" {
		if res, ok := o.resource(r); !ok || res != grant.Resource {
			return oauthFail(c, http.StatusBadRequest, "invalid_target", "resource does not match the authorization request")
		}
	}
	refresh, err := newRefreshToken()
	if err != nil {
		return err
	}
	if _, err := o.store.CreateRefresh(ctx, &accounts.OAuthRefresh{Hash: accounts.HashKey(refresh), Family: grant.Family, ClientID: client,
		AccountID: grant.AccountID, Scope: grant.Scope, Resource: grant.Resource, Expires: o.now().Add(refreshTTL)}); err != nil {
		if wire.IsCode(err, wire.FailedPrecondition) {
			return oauthFail(c, http.StatusBadRequest, "invalid_grant", "the account is disabled")
		}
		return err
	}
	return o.respondTokens(c, grant.AccountID, client, grant.Scope, grant.Resource, grant.Family, refresh)
}

func (o *Server) refreshGrant(c echo.Context) error {
	old, client := c.FormValue("refresh_token"), clientID(c)
	if old == "" || client == "" {
		return oauthFail(c, http.StatusBadRequest, "invalid_request", "refresh_token and client_id are required")
	}
	scope := ""
	if s := c.FormValue("scope"); s != "" {
		scopes, err := parseScope(s)
		if err != nil {
			return oauthFail(c, http.StatusBadRequest, "invalid_scope", err.Error())
		}
		scope = strings.Join(scopes, " ")
	}
	// Checked before the rotation spends the token: there is one
	// resource, so a valid one is the grant's.
	if _, ok := o.resource(c.FormValue("resource")); !ok {
		return oauthFail(c, http.StatusBadRequest, "invalid_target", "resource does not match the grant")
	}
	next, err := newRefreshToken()
	if err != nil {
		return err
	}
	grant, err := o.store.RotateRefresh(c.Request().Context(), &accounts.OAuthRefreshRotateRequest{Hash: accounts.HashKey(old), ClientID: client,
		Next: accounts.OAuthRefresh{Hash: accounts.HashKey(next), Scope: scope, Expires: o.now().Add(refreshTTL)}})
	switch {
	case wire.IsCode(err, wire.Unauthenticated), wire.IsCode(err, wire.FailedPrecondition):
		// A reuse makes vfs-svc kill the grant: learn it at once.
		o.tokens.revoked.invalidate()
		return oauthFail(c, http.StatusBadRequest, "invalid_grant", "the refresh token is invalid, expired or revoked")
	case wire.IsCode(err, wire.InvalidArgument):
		return oauthFail(c, http.StatusBadRequest, "invalid_scope", "the scope exceeds the original grant")
	case err != nil:
		return err
	}
	if scope == "" {
		scope = grant.Scope
	}
	return o.respondTokens(c, grant.AccountID, client, scope, grant.Resource, grant.Family, next)
}

// respondTokens mints the access token and writes the token response.
func (o *Server) respondTokens(c echo.Context, account, client, scope, resource, family, refresh string) error {
	access, err := o.tokens.Mint(c.Request().Context(), AccessClaims{
		RegisteredClaims: jwt.RegisteredClaims{Subject: account, Audience: jwt.ClaimStrings{resource}},
		Scope:            scope, ClientID: client, Grant: family,
	}, accessTokenTTL)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	c.Response().Header().Set("Pragma", "no-cache")
	return c.JSON(http.StatusOK, tokenResponse{AccessToken: access, TokenType: "Bearer", ExpiresIn: int(accessTokenTTL.Seconds()),
		RefreshToken: refresh, Scope: scope})
}

func newRefreshToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return refreshPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// revoke answers POST /oauth/revoke (RFC 7009). A refresh token takes its
// whole family with it; an access token is refused by every replica until
// it expires, and its grant's refresh tokens die too. Unknown tokens get
// 200 like known ones (§2.2).
func (o *Server) revoke(c echo.Context) error {
	ctx := c.Request().Context()
	tok := c.FormValue("token")
	if tok == "" {
		return oauthFail(c, http.StatusBadRequest, "invalid_request", "token is required")
	}
	if strings.HasPrefix(tok, refreshPrefix) {
		if _, err := o.store.RevokeRefresh(ctx, &accounts.OAuthRefreshRevokeRequest{Hash: accounts.HashKey(tok), ClientID: clientID(c)}); err != nil {
			return err
		}
		// vfs-svc killed the grant: its access tokens go too (RFC 7009 §2.1).
		o.tokens.revoked.invalidate()
		return c.NoContent(http.StatusOK)
	}
	claims, err := o.tokens.parse(ctx, tok, o.tokens.resource)
	if wire.IsCode(err, wire.Unauthenticated) {
		return c.NoContent(http.StatusOK)
	}
	if err != nil {
		return err
	}
	if id := clientID(c); id != "" && claims.ClientID != id {
		return c.NoContent(http.StatusOK) // not this client's token: nothing happens
	}
	revs := []accounts.Revocation{{Kind: accounts.RevokedToken, ID: claims.ID, Until: claims.ExpiresAt.Add(clockSkew)}}
	if claims.Grant != "" {
		revs = append(revs, accounts.Revocation{Kind: accounts.RevokedGrant, ID: claims.Grant, Until: o.now().Add(accounts.GrantKillTTL)})
	}
	if err := o.tokens.revoked.add(ctx, revs...); err != nil {
		return err
	}
	if claims.Grant != "" {
		if _, err := o.store.RevokeRefresh(ctx, &accounts.OAuthRefreshRevokeRequest{Family: claims.Grant}); err != nil {
			return err
		}
	}
	return c.NoContent(http.StatusOK)
}
