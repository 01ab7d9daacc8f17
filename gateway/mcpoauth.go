package gateway

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mirobody/mirobody-go/gateway/internal/oauth"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/seal"
	"github.com/mirobody/mirobody-go/services/wire"
)

// The browser side of an external server's OAuth flow (design.md
// "External servers' OAuth flows"): the flow is bound to the browser
// that started it by a cookie, and the state the authorization server
// sees is opaque.

// flowTTL is how long a browser has to finish a flow (registry-svc keeps
// the pending flow as long).
const flowTTL = 10 * time.Minute

// flowCookiePrefix starts the name of a flow's cookie; the rest is a hash
// of the state, so that flows started side by side keep their cookies.
const flowCookiePrefix = "mirobody_mcp_oauth_"

// flow is the sealed value of a flow cookie: the account and server the
// state belongs to. Only this browser holds it.
type flow struct {
	AccountID string `json:"a"`
	Name      string `json:"n"`
	State     string `json:"s"`
	Expires   int64  `json:"e"`
}

// newFlowBox returns the box flow cookies are sealed with: from
// SECRET_KEY, else a random key (this replica only, as the OAuth pages).
func newFlowBox(secret string) (*seal.Box, error) {
	key := []byte(secret)
	if secret == "" {
		key = []byte(rand.Text())
	}
	return seal.Derive(key, "mirobody external server oauth flow v1")
}

// flowCookieName names the cookie of the flow with state.
func flowCookieName(state string) string {
	sum := sha256.Sum256([]byte(state))
	return flowCookiePrefix + hex.EncodeToString(sum[:8])
}

// setFlowCookie binds the flow (account, server, state) to the browser of
// c: HttpOnly, SameSite=Lax (the authorization server's redirect is a
// top-level navigation, which carries it), Secure on https, and sent to
// the callback only.
func (s *Service) setFlowCookie(c echo.Context, account, name, state string) error {
	cookie := flowCookieName(state)
	plain, err := json.Marshal(flow{AccountID: account, Name: name, State: state, Expires: time.Now().Add(flowTTL).Unix()})
	if err != nil {
		return err
	}
	value := base64.RawURLEncoding.EncodeToString(s.flows.Seal(plain, []byte(cookie)))
	c.SetCookie(&http.Cookie{Name: cookie, Value: value, Path: registry.OAuthCallbackPath, MaxAge: int(flowTTL.Seconds()),
		HttpOnly: true, Secure: strings.HasPrefix(s.opts.Config.MCPPublicURL, "https://"), SameSite: http.SameSiteLaxMode})
	return nil
}

// openFlowCookie returns the flow with state that this browser started,
// or nil, and clears its cookie (a state is good for one callback).
func (s *Service) openFlowCookie(c echo.Context, state string) *flow {
	if state == "" {
		return nil
	}
	name := flowCookieName(state)
	ck, err := c.Cookie(name)
	if err != nil {
		return nil
	}
	c.SetCookie(&http.Cookie{Name: name, Path: registry.OAuthCallbackPath, MaxAge: -1, HttpOnly: true,
		Secure: strings.HasPrefix(s.opts.Config.MCPPublicURL, "https://"), SameSite: http.SameSiteLaxMode})
	raw, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil {
		return nil
	}
	plain, err := s.flows.Open(raw, []byte(name))
	var f flow
	if err != nil || json.Unmarshal(plain, &f) != nil || time.Now().Unix() >= f.Expires ||
		subtle.ConstantTimeCompare([]byte(f.State), []byte(state)) != 1 {
		return nil
	}
	return &f
}

// notBound is the callback's answer to a browser that did not start the flow.
const notBound = "This authorization is unknown, expired or already used, or it was started in another browser. Start it again from Mirobody, in this browser."

// mcpServerOAuthCallback passes code and state to registry-svc, which
// exchanges them; the tokens never reach the gateway. Only the browser
// that started the flow gets this far: the account and server come from
// its flow cookie, never from the state.
func (s *Service) mcpServerOAuthCallback(c echo.Context) error {
	q := c.QueryParams()
	f := s.openFlowCookie(c, q.Get("state"))
	if f == nil {
		return oauth.DonePage(c, http.StatusBadRequest, "Not connected", notBound)
	}
	srv, err := s.registry.OAuthCallback(c.Request().Context(), &registry.ServerOAuthCallbackRequest{
		AccountID: f.AccountID, Name: f.Name, State: f.State, Code: q.Get("code"), Error: q.Get("error")})
	if err != nil {
		return flowFailed(c, err)
	}
	// The page's URL carries the code and state: DonePage sets no-store,
	// no-referrer and a CSP like every OAuth page.
	return oauth.DonePage(c, http.StatusOK, "Connected", "Mirobody is connected to "+srv.Name+". You can close this page.")
}

// mcpServerOAuthStart opens a start link (registry.ServerAddRequest.Link,
// the CLI's): it binds this browser to the flow and sends it to the
// authorization server. The link is good once.
func (s *Service) mcpServerOAuthStart(c echo.Context) error {
	q := c.QueryParams()
	account, name := q.Get("account"), q.Get("server")
	resp, err := s.registry.OAuthStart(c.Request().Context(), &registry.ServerOAuthStartRequest{AccountID: account, Name: name, Link: q.Get("link")})
	if err != nil {
		return flowFailed(c, err)
	}
	if err := s.setFlowCookie(c, account, name, resp.State); err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	c.Response().Header().Set("Referrer-Policy", "no-referrer")
	return c.Redirect(http.StatusFound, resp.AuthorizeURL)
}

// flowFailed renders a refused or failed flow step.
func flowFailed(c echo.Context, err error) error {
	status := http.StatusBadRequest
	msg := "Mirobody could not finish the authorization."
	var we *wire.Error
	if errors.As(err, &we) && (we.Code == wire.FailedPrecondition || we.Code == wire.PermissionDenied) {
		msg = we.Message
	} else {
		status = http.StatusBadGateway
	}
	return oauth.DonePage(c, status, "Not connected", msg)
}
