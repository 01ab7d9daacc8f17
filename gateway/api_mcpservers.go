package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/wire"
)

// mcpServerRoutes adds /api/mcp-servers (SPEC §7): the caller's external
// MCP servers. registry-svc validates them and vfs-svc stores them; no
// answer carries a secret. The OAuth callback and start link have no
// bearer auth: the user's browser arrives there from the server's
// authorization server (or the CLI's output), and the flow cookie set
// when the flow started binds it to the account and flow (mcpoauth.go).
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
