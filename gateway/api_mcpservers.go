package gateway

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mirobody/mirobody-go/gateway/internal/oauth"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/seal"
	"github.com/mirobody/mirobody-go/services/wire"
)

// mcpServerRoutes adds /api/mcp-servers (registry-svc/design.md "External MCP
// servers"): the caller's external MCP servers. registry-svc validates them and
// vfs-svc stores them; no answer carries a secret. The OAuth callback and start
// link have no bearer auth: the user's browser arrives there from the server's
// authorization server (or the CLI's output), and the flow cookie set when the
// flow started binds it to the account and flow (flowBox, below).
func (s *Service) mcpServerRoutes(e *echo.Echo, api *echo.Group) {
	e.GET(registry.OAuthCallbackPath, s.mcpServerOAuthCallback, s.limitIP)
	e.GET(registry.OAuthStartPath, s.mcpServerOAuthStart, s.limitIP)
	api.GET("/mcp-servers", s.listMCPServers)
	api.POST("/mcp-servers", s.addMCPServer)
	api.PATCH("/mcp-servers/:name", s.updateMCPServer)
	api.DELETE("/mcp-servers/:name", s.removeMCPServer)
}

func (s *Service) listMCPServers(c echo.Context) error {
	resp, err := s.registry.ListServers(c.Request().Context(), &registry.ServerListRequest{AccountID: principal(c).AccountID})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resp)
}

// addMCPServerBody is the body of POST /api/mcp-servers.
type addMCPServerBody struct {
	Name        string            `json:"name"`
	URL         string            `json:"url"`
	AccessToken string            `json:"access_token"`
	Headers     map[string]string `json:"headers"`
	Enabled     *bool             `json:"enabled"`
	// Auth "oauth" makes Mirobody an OAuth client of the server: the
	// answer carries the authorize_url the user opens.
	Auth string `json:"auth"`
}

func (s *Service) addMCPServer(c echo.Context) error {
	var body addMCPServerBody
	if err := s.bindJSON(c, &body, "the body must be a JSON object with name and url"); err != nil {
		return err
	}
	account := principal(c).AccountID
	srv, err := s.registry.AddServer(c.Request().Context(), &registry.ServerAddRequest{AccountID: account,
		Name: body.Name, URL: body.URL, AccessToken: body.AccessToken, Headers: body.Headers, Enabled: body.Enabled,
		Auth: body.Auth, RedirectURI: s.mcpOAuthRedirectURI()})
	if err != nil {
		return err
	}
	if srv.AuthorizeURL != "" {
		// The flow belongs to the browser (or client) that asked: only
		// it may come back to the callback (issue 15, finding 4).
		u, err := url.Parse(srv.AuthorizeURL)
		if err != nil {
			return fmt.Errorf("reading the authorize URL: %w", err)
		}
		if err := s.setFlowCookie(c, account, srv.Name, u.Query().Get("state")); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusCreated, srv)
}

func (s *Service) updateMCPServer(c echo.Context) error {
	var body struct {
		Enabled *bool `json:"enabled"`
	}
	const usage = `the body must be {"enabled": true|false}`
	if err := s.bindJSON(c, &body, usage); err != nil {
		return err
	}
	if body.Enabled == nil {
		return wire.Errorf(wire.InvalidArgument, usage)
	}
	srv, err := s.registry.UpdateServer(c.Request().Context(), &registry.ServerUpdateRequest{AccountID: principal(c).AccountID,
		Name: c.Param("name"), Enabled: *body.Enabled})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, srv)
}

func (s *Service) removeMCPServer(c echo.Context) error {
	if _, err := s.registry.RemoveServer(c.Request().Context(), &registry.ServerRemoveRequest{AccountID: principal(c).AccountID,
		Name: c.Param("name")}); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Service) mcpOAuthRedirectURI() string {
	return strings.TrimRight(s.opts.Config.MCPPublicURL, "/") + registry.OAuthCallbackPath
}

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
