package gateway

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/mirobody/mirobody-go/gateway/internal/authn"
	"github.com/mirobody/mirobody-go/gateway/internal/oauth"
	"github.com/mirobody/mirobody-go/services/wire"
)

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
