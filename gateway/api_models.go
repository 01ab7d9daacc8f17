package gateway

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/wire"
)

// modelRoutes adds the model picker's lists, from agent-svc (which alone
// knows the providers; keys never leave it).
func (s *Service) modelRoutes(api *echo.Group) {
	api.GET("/agents", s.listAgents)
	api.GET("/providers", s.listProviders)
}

// listAgents answers GET /api/agents: every agent with its providers,
// the default ones marked.
func (s *Service) listAgents(c echo.Context) error {
	resp, err := agent.ProvidersList.Call(c.Request().Context(), s.node.Client, &agent.ProvidersRequest{})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resp)
}

// providersView is the answer of GET /api/providers.
type providersView struct {
	Agent     agent.Name           `json:"agent"`
	Providers []agent.ProviderInfo `json:"providers"`
}

// listProviders answers GET /api/providers[?agent=]: the providers of one
// agent (the default agent when none is named), as a chat turn's provider
// and model may name them.
func (s *Service) listProviders(c echo.Context) error {
	name, err := agent.Normalize(c.QueryParam("agent"), s.opts.Config.DefaultAgent)
	if err != nil {
		return err
	}
	resp, err := agent.ProvidersList.Call(c.Request().Context(), s.node.Client, &agent.ProvidersRequest{})
	if err != nil {
		return err
	}
	for _, a := range resp.Agents {
		if a.Name == name {
			return c.JSON(http.StatusOK, providersView{Agent: a.Name, Providers: a.Providers})
		}
	}
	return wire.Errorf(wire.NotFound, "agent-svc lists no agent %q", name)
}
