package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/wire"
)

// mcpServerRoutes adds /api/mcp-servers (SPEC §7): the caller's external
// MCP servers. registry-svc validates them and vfs-svc stores them; no
// answer carries a secret.
func (s *Service) mcpServerRoutes(api *echo.Group) {
	api.GET("/mcp-servers", s.listMCPServers)
	api.POST("/mcp-servers", s.addMCPServer)
	api.PATCH("/mcp-servers/:name", s.updateMCPServer)
	api.DELETE("/mcp-servers/:name", s.removeMCPServer)
}

func (s *Service) listMCPServers(c echo.Context) error {
	resp, err := s.mcp.Registry.ListServers(c.Request().Context(), &registry.ServerListRequest{AccountID: principal(c).AccountID})
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
}

func (s *Service) addMCPServer(c echo.Context) error {
	var body addMCPServerBody
	if err := json.NewDecoder(c.Request().Body).Decode(&body); err != nil {
		return wire.Errorf(wire.InvalidArgument, "the body must be a JSON object with name and url")
	}
	srv, err := s.mcp.Registry.AddServer(c.Request().Context(), &registry.ServerAddRequest{AccountID: principal(c).AccountID,
		Name: body.Name, URL: body.URL, AccessToken: body.AccessToken, Headers: body.Headers, Enabled: body.Enabled})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, srv)
}

func (s *Service) updateMCPServer(c echo.Context) error {
	var body struct {
		Enabled *bool `json:"enabled"`
	}
	if err := json.NewDecoder(c.Request().Body).Decode(&body); err != nil || body.Enabled == nil {
		return wire.Errorf(wire.InvalidArgument, `the body must be {"enabled": true|false}`)
	}
	srv, err := s.mcp.Registry.UpdateServer(c.Request().Context(), &registry.ServerUpdateRequest{AccountID: principal(c).AccountID,
		Name: c.Param("name"), Enabled: *body.Enabled})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, srv)
}

func (s *Service) removeMCPServer(c echo.Context) error {
	if _, err := s.mcp.Registry.RemoveServer(c.Request().Context(), &registry.ServerRemoveRequest{AccountID: principal(c).AccountID,
		Name: c.Param("name")}); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
