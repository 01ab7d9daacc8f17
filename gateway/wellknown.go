package gateway

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// protectedResource is the RFC 9728 metadata of /mcp.
type protectedResource struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name"`
}

// protectedResourceMetadata answers /.well-known/oauth-protected-resource
// and its /mcp variant. The gateway is its own authorization server (the
// issuer is the public base URL); API keys work as bearer tokens too.
func (s *Service) protectedResourceMetadata(c echo.Context) error {
	base := strings.TrimRight(s.opts.Config.MCPPublicURL, "/")
	c.Response().Header().Set("Cache-Control", "public, max-age=3600")
	return c.JSON(http.StatusOK, protectedResource{
		Resource:               base + "/mcp",
		AuthorizationServers:   []string{base},
		ScopesSupported:        []string{"mcp"},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "Mirobody",
	})
}
