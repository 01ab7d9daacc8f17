package gateway

import (
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mirobody/mirobody-go/gateway/internal/authn"
	"github.com/mirobody/mirobody-go/gateway/internal/oauth"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// keyRoutes adds /api/keys: the caller's own API keys, on the vfs-svc key
// contract the `mirobody keys` CLI uses.
func (s *Service) keyRoutes(api *echo.Group) {
	api.GET("/keys", s.listAPIKeys)
	api.POST("/keys", s.createAPIKey)
	api.DELETE("/keys/:id", s.revokeAPIKey)
}

// apiKeyView is an API key as /api/keys shows it. Current marks the key
// the request was made with, so a client can warn before revoking it.
type apiKeyView struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	Scopes     []string   `json:"scopes"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	Current    bool       `json:"current,omitempty"`
}

func viewKey(k *accounts.APIKey, p *authn.Principal) apiKeyView {
	return apiKeyView{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Scopes: k.Scopes, CreatedAt: k.Created, LastUsedAt: k.LastUsed,
		Current: k.ID == p.KeyID}
}

// listAPIKeys answers GET /api/keys: the caller's keys that still work,
// newest first.
func (s *Service) listAPIKeys(c echo.Context) error {
	p := principal(c)
	resp, err := s.accounts.ListKeys(c.Request().Context(), &accounts.KeyListRequest{AccountID: p.AccountID})
	if err != nil {
		return err
	}
	keys := []apiKeyView{}
	for i := range resp.Keys {
		if resp.Keys[i].Revoked == nil {
			keys = append(keys, viewKey(&resp.Keys[i], p))
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"keys": keys})
}

// createKeyRequest is the body of POST /api/keys.
type createKeyRequest struct {
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
}

// createAPIKey answers POST /api/keys with the new key's secret, the only
// time it is shown. A key never gets a scope its creator lacks, so a
// key limited to "api" cannot mint one for /mcp; without scopes the new
// key gets the creator's.
func (s *Service) createAPIKey(c echo.Context) error {
	p := principal(c)
	var body createKeyRequest
	if err := s.bindJSON(c, &body, `the body must be a JSON object like {"name":"laptop","scopes":["mcp"]}`); err != nil {
		return err
	}
	for _, sc := range body.Scopes {
		if !slices.Contains(accounts.KeyScopes(), sc) {
			return wire.Errorf(wire.InvalidArgument, "unknown scope %q: want mcp or api", sc)
		}
		if !slices.Contains(p.Scopes, sc) {
			return wire.Errorf(wire.PermissionDenied, "scope %q is not held by the key making the request", sc)
		}
	}
	requested := body.Scopes
	if len(requested) == 0 {
		requested = p.Scopes
	}
	// In accounts.KeyScopes' order, without duplicates, and only those the caller holds.
	scopes := slices.DeleteFunc(accounts.KeyScopes(), func(sc string) bool {
		return !slices.Contains(requested, sc) || !slices.Contains(p.Scopes, sc)
	})
	resp, err := s.accounts.CreateKey(c.Request().Context(), &accounts.KeyCreateRequest{AccountID: p.AccountID, Name: body.Name, Scopes: scopes})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, struct {
		apiKeyView
		Key string `json:"key"`
	}{viewKey(&resp.APIKey, p), resp.Key})
}

// revokeAPIKey answers DELETE /api/keys/{id}. vfs-svc announces the
// revocation, so every gateway replica drops the key from its cache.
func (s *Service) revokeAPIKey(c echo.Context) error {
	p := principal(c)
	if _, err := s.accounts.RevokeKey(c.Request().Context(), &accounts.KeyRevokeRequest{AccountID: p.AccountID, KeyID: c.Param("id")}); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// me answers GET /api/me: the caller's account.
func (s *Service) me(c echo.Context) error {
	a, err := s.accounts.Get(c.Request().Context(), &accounts.AccountGetRequest{ID: principal(c).AccountID})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, a)
}

// sessionRoutes adds the web app's password sign-in (design.md "Web app
// sign-in"): login is open (behind the per-IP budget and the login
// lockout), the rest needs the session it made.
func (s *Service) sessionRoutes(e *echo.Echo, api *echo.Group) {
	e.POST("/api/session/login", s.sessionLogin, s.limitIP)
	api.GET("/session", s.sessionInfo)
	api.POST("/session/logout", s.sessionLogout)
}

// loginRequest is the body of POST /api/session/login.
type loginRequest struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

// sessionView is the signed-in web session: the app repeats CSRF in the
// X-CSRF-Token header of every request that changes state.
type sessionView struct {
	AccountID string `json:"account_id"`
	Email     string `json:"email,omitempty"`
	CSRF      string `json:"csrf,omitempty"`
}

// sessionLogin answers POST /api/session/login: it checks the password
// and sets the session cookie.
func (s *Service) sessionLogin(c echo.Context) error {
	var body loginRequest
	if err := s.bindJSON(c, &body, `the body must be a JSON object {"email": "...", "password": "..."}`); err != nil {
		return err
	}
	if body.Email == "" || body.Password == "" {
		return wire.Errorf(wire.InvalidArgument, "email and password are required")
	}
	ws, err := s.oauth.WebLogin(c.Request().Context(), body.Email, body.Password, authn.ClientIP(c.Request()))
	var locked *oauth.LockedOut
	switch {
	case errors.As(err, &locked):
		c.Response().Header().Set("Retry-After", authn.RetryAfter(locked.RetryAfter))
		return wire.Errorf(wire.ResourceExhausted, "too many sign-in attempts; try again in %s s", authn.RetryAfter(locked.RetryAfter))
	case wire.IsCode(err, wire.Unauthenticated):
		return wire.Errorf(wire.Unauthenticated, "wrong email or password")
	case err != nil:
		return err
	}
	c.SetCookie(ws.Cookie)
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, sessionView{AccountID: ws.AccountID, Email: ws.Email, CSRF: ws.CSRF})
}

// sessionInfo answers GET /api/session: who is signed in, and for a
// cookie session its CSRF token (a page reload has lost it; a foreign
// origin cannot read this answer).
func (s *Service) sessionInfo(c echo.Context) error {
	p := principal(c)
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, sessionView{AccountID: p.AccountID, Email: p.WebEmail, CSRF: p.CSRF})
}

// sessionLogout answers POST /api/session/logout: the session is revoked
// on every replica, so its cookie stops working even if replayed.
func (s *Service) sessionLogout(c echo.Context) error {
	ck, err := c.Cookie(oauth.WebSessionCookie)
	if err != nil || principal(c).CSRF == "" {
		return wire.Errorf(wire.InvalidArgument, "the request carries no web session; API keys are revoked under /api/keys")
	}
	clear, err := s.oauth.WebLogout(c.Request().Context(), ck.Value)
	if err != nil {
		return err
	}
	c.SetCookie(clear)
	return c.NoContent(http.StatusNoContent)
}
