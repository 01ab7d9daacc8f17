package registry

import (
	"context"
	"regexp"
	"time"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Endpoints and events for an account's external MCP servers
// (registry-svc/design.md "External MCP servers"). registry-svc validates them
// (name, URL, SSRF policy), stores them in vfs-svc and adds their tools to the
// account's list.
var (
	ServersAdd    = wire.Endpoint[ServerAddRequest, Server]{Subject: "registry.servers.add"}
	ServersList   = wire.Endpoint[ServerListRequest, ServerListResponse]{Subject: "registry.servers.list", Idempotent: true}
	ServersUpdate = wire.Endpoint[ServerUpdateRequest, Server]{Subject: "registry.servers.update"}
	ServersRemove = wire.Endpoint[ServerRemoveRequest, Server]{Subject: "registry.servers.remove"}
	// ServersOAuthCallback finishes an OAuth authorization: the
	// gateway's callback page passes the code and state, registry-svc
	// exchanges them for tokens (the gateway never sees them).
	ServersOAuthCallback = wire.Endpoint[ServerOAuthCallbackRequest, Server]{Subject: "registry.servers.oauth_callback"}
	// ServersOAuthStart opens the start link of a flow begun with Link
	// (the CLI's): the gateway binds the browser that opens it.
	ServersOAuthStart = wire.Endpoint[ServerOAuthStartRequest, ServerOAuthStartResponse]{Subject: "registry.servers.oauth_start"}
	// AccountChanged, for one account (AccountChanged.For(account)), is
	// published when that account's tool list changed: its servers were
	// edited, one of them sent list_changed, or went down or came back.
	AccountChanged = wire.Event[ChangedEvent]{Subject: "events.registry.changed.*"}
)

// OAuthCallbackPath is the gateway page authorization servers send the
// user back to; the redirect URI is MCP_PUBLIC_URL followed by it.
const OAuthCallbackPath = "/api/mcp-servers/oauth/callback"

// OAuthStartPath is the gateway page a start link (ServerAddRequest.Link)
// opens: it binds the browser to the flow, then sends it to the
// authorization server.
const OAuthStartPath = "/api/mcp-servers/oauth/start"

// ToolSeparator joins a server name and its tool's name: `<server>__<tool>`.
const ToolSeparator = "__"

// ServerNamePattern is what a server name must match.
var ServerNamePattern = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)

// Auth kinds of a server.
const (
	AuthNone    = "none"
	AuthBearer  = "bearer"
	AuthHeaders = "headers"
	AuthOAuth   = "oauth"
)

// Health statuses of a server.
const (
	HealthOK      = "ok"
	HealthDown    = "down"
	HealthUnknown = "unknown"
)

// Health is what this replica knows of a server's reachability.
type Health struct {
	Status    string     `json:"status"`
	Error     string     `json:"error,omitempty"`
	Tools     *int       `json:"tools,omitempty"`
	CheckedAt *time.Time `json:"checked_at,omitempty"`
	// Dropped says which of the server's tools are left out of lists and
	// why (an invalid name or schema, over the tool count cap), at most a
	// few lines.
	Dropped []string `json:"dropped,omitempty"`
}

// Server is an external MCP server as /api/mcp-servers shows it: never
// with its secrets.
type Server struct {
	Name    string `json:"name"`
	URL     string `json:"url"`
	Enabled bool   `json:"enabled"`
	Auth    string `json:"auth"`
	Health  Health `json:"health"`
	// AuthorizeURL is set in the answer to an add with auth oauth: the
	// page the user opens to let Mirobody in.
	AuthorizeURL string `json:"authorize_url,omitempty"`
}

// ServerAddRequest adds a server to an account. Enabled nil means true.
type ServerAddRequest struct {
	AccountID   string            `json:"account_id"`
	Name        string            `json:"name"`
	URL         string            `json:"url"`
	AccessToken string            `json:"access_token,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	Enabled     *bool             `json:"enabled,omitempty"`
	// Auth "oauth" starts an OAuth authorization (with RedirectURI, the
	// gateway's callback); empty means bearer or headers from the fields.
	Auth        string `json:"auth,omitempty"`
	RedirectURI string `json:"redirect_uri,omitempty"`
	// Link makes AuthorizeURL a single-use start link on the gateway
	// (OAuthStartPath) instead of the authorization server's page, for a
	// caller that has no browser to bind the flow to (the CLI, whose
	// output only the operator sees). The gateway's API never sets it: it
	// binds the flow to the browser that added the server.
	Link bool `json:"link,omitempty"`
}

// ServerOAuthCallbackRequest is what the authorization server sent the
// user's browser back with, and the flow (account and server) the
// gateway found bound to that browser: the state itself is opaque.
type ServerOAuthCallbackRequest struct {
	AccountID string `json:"account_id"`
	Name      string `json:"name"`
	State     string `json:"state"`
	Code      string `json:"code"`
	// Error is the authorization server's error code, when it refused.
	Error string `json:"error,omitempty"`
}

// ServerOAuthStartRequest opens a start link: its query parameters.
type ServerOAuthStartRequest struct {
	AccountID string `json:"account_id"`
	Name      string `json:"name"`
	Link      string `json:"link"`
}

// ServerOAuthStartResponse is the flow a start link opened: the gateway
// binds it to the browser and sends the browser to AuthorizeURL.
type ServerOAuthStartResponse struct {
	State        string `json:"state"`
	AuthorizeURL string `json:"authorize_url"`
}

// ServerListRequest lists an account's servers.
type ServerListRequest struct {
	AccountID string `json:"account_id"`
}

// ServerListResponse is the servers, sorted by name.
type ServerListResponse struct {
	Servers []Server `json:"servers"`
}

// ServerUpdateRequest switches a server on or off.
type ServerUpdateRequest struct {
	AccountID string `json:"account_id"`
	Name      string `json:"name"`
	Enabled   bool   `json:"enabled"`
}

// ServerRemoveRequest removes a server.
type ServerRemoveRequest struct {
	AccountID string `json:"account_id"`
	Name      string `json:"name"`
}

// AddServer validates and stores a server: invalid_argument for a bad name
// or URL or one refused by the SSRF policy, already_exists for a taken name.
func (c *Client) AddServer(ctx context.Context, req *ServerAddRequest) (*Server, error) {
	return ServersAdd.Call(ctx, c.c, req)
}

// ListServers returns an account's servers with their health.
func (c *Client) ListServers(ctx context.Context, req *ServerListRequest) (*ServerListResponse, error) {
	return ServersList.Call(ctx, c.c, req)
}

// UpdateServer switches a server on or off.
func (c *Client) UpdateServer(ctx context.Context, req *ServerUpdateRequest) (*Server, error) {
	return ServersUpdate.Call(ctx, c.c, req)
}

// RemoveServer removes a server; an unknown name is not_found.
func (c *Client) RemoveServer(ctx context.Context, req *ServerRemoveRequest) (*Server, error) {
	return ServersRemove.Call(ctx, c.c, req)
}

// OAuthCallback exchanges an authorization code for a server's tokens:
// failed_precondition for an unknown, used or expired state.
func (c *Client) OAuthCallback(ctx context.Context, req *ServerOAuthCallbackRequest) (*Server, error) {
	return ServersOAuthCallback.Call(ctx, c.c, req)
}

// OAuthStart spends a start link: failed_precondition for an unknown,
// used or expired one.
func (c *Client) OAuthStart(ctx context.Context, req *ServerOAuthStartRequest) (*ServerOAuthStartResponse, error) {
	return ServersOAuthStart.Call(ctx, c.c, req)
}
