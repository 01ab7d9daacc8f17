// Package mcpservers is the vfs-svc contract of the external MCP server
// configurations of an account, with their credentials encrypted at rest.
package mcpservers

import (
	"context"
	"time"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Endpoints for the external MCP servers of an account (registry-svc/design.md
// "External MCP servers"). vfs-svc stores them, with their secrets encrypted at
// rest; registry-svc is the only caller (it validates and checks the SSRF
// policy first).
var (
	Create = wire.Endpoint[MCPServerCreateRequest, MCPServer]{Subject: "vfs.mcpservers.create"}
	List   = wire.Endpoint[MCPServerListRequest, MCPServerListResponse]{Subject: "vfs.mcpservers.list", Idempotent: true}
	Update = wire.Endpoint[MCPServerUpdateRequest, MCPServer]{Subject: "vfs.mcpservers.update"}
	Delete = wire.Endpoint[MCPServerDeleteRequest, MCPServer]{Subject: "vfs.mcpservers.delete"}
	// SetSecrets replaces a server's credentials (OAuth
	// tokens after an exchange or a refresh).
	SetSecrets = wire.Endpoint[MCPServerSetSecretsRequest, MCPServer]{Subject: "vfs.mcpservers.set_secrets"}
	// ClaimOAuth takes a server's pending OAuth flow by
	// its state, once: the flow is cleared in the same transaction.
	ClaimOAuth = wire.Endpoint[MCPServerClaimOAuthRequest, MCPServer]{Subject: "vfs.mcpservers.claim_oauth"}
)

// MCPServerSecrets are a server's credentials: the bearer token and extra
// headers sent to it. They leave vfs-svc only when a list asks for them.
type MCPServerSecrets struct {
	AccessToken string            `json:"access_token,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	// OAuth is set for a server with auth oauth.
	OAuth *MCPServerOAuth `json:"oauth,omitempty"`
}

// MCPServerOAuth is Mirobody's OAuth client state for one server: its
// registration at the authorization server, the tokens, and the pending
// authorization code flow (state and PKCE verifier) until the callback.
type MCPServerOAuth struct {
	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret,omitempty"`
	AuthURL      string   `json:"auth_url"`
	TokenURL     string   `json:"token_url"`
	RedirectURI  string   `json:"redirect_uri"`
	Resource     string   `json:"resource"`
	Scopes       []string `json:"scopes,omitempty"`

	AccessToken  string    `json:"access_token,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`

	// State and Verifier belong to the flow in progress, until PendingUntil.
	State        string    `json:"state,omitempty"`
	Verifier     string    `json:"verifier,omitempty"`
	PendingUntil time.Time `json:"pending_until,omitzero"`
	// Link is the secret of the flow's start link (registry
	// ServerAddRequest.Link), until a browser opens it.
	Link string `json:"link,omitempty"`
}

// MCPServer is one stored external MCP server.
type MCPServer struct {
	AccountID string `json:"account_id"`
	Name      string `json:"name"`
	URL       string `json:"url"`
	// Auth is how Mirobody authenticates to it: none, bearer, headers or oauth.
	Auth    string    `json:"auth"`
	Enabled bool      `json:"enabled"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// Secrets is set only in a list with WithSecrets, and in a create request.
	Secrets *MCPServerSecrets `json:"secrets,omitempty"`
	// Unreadable is set in a list with WithSecrets when the stored
	// credentials cannot be decrypted (SECRET_KEY missing or changed).
	Unreadable bool `json:"unreadable,omitempty"`
}

// MCPServerCreateRequest stores a new server; Secrets may be nil.
type MCPServerCreateRequest struct {
	Server MCPServer `json:"server"`
}

// MCPServerListRequest lists an account's servers, by name.
type MCPServerListRequest struct {
	AccountID string `json:"account_id"`
	// WithSecrets decrypts and returns the credentials (registry-svc uses
	// them to connect).
	WithSecrets bool `json:"with_secrets,omitempty"`
}

// MCPServerListResponse is the servers, sorted by name.
type MCPServerListResponse struct {
	Servers []MCPServer `json:"servers"`
}

// MCPServerUpdateRequest switches a server on or off.
type MCPServerUpdateRequest struct {
	AccountID string `json:"account_id"`
	Name      string `json:"name"`
	Enabled   bool   `json:"enabled"`
}

// MCPServerDeleteRequest removes a server.
type MCPServerDeleteRequest struct {
	AccountID string `json:"account_id"`
	Name      string `json:"name"`
}

// MCPServerSetSecretsRequest replaces a server's credentials.
type MCPServerSetSecretsRequest struct {
	AccountID string            `json:"account_id"`
	Name      string            `json:"name"`
	Secrets   *MCPServerSecrets `json:"secrets"`
}

// MCPServerClaimOAuthRequest takes the pending OAuth flow whose state is State.
type MCPServerClaimOAuthRequest struct {
	AccountID string `json:"account_id"`
	Name      string `json:"name"`
	State     string `json:"state"`
}

// MCPServers is the typed client of the external MCP server store.
type MCPServers struct{ c *wire.Client }

// NewMCPServers returns an MCPServers client over c.
func NewMCPServers(c *wire.Client) *MCPServers { return &MCPServers{c: c} }

// Create stores a server; a taken name is already_exists.
func (m *MCPServers) Create(ctx context.Context, req *MCPServerCreateRequest) (*MCPServer, error) {
	return Create.Call(ctx, m.c, req)
}

// List returns an account's servers.
func (m *MCPServers) List(ctx context.Context, req *MCPServerListRequest) (*MCPServerListResponse, error) {
	return List.Call(ctx, m.c, req)
}

// Update switches a server on or off; an unknown name is not_found.
func (m *MCPServers) Update(ctx context.Context, req *MCPServerUpdateRequest) (*MCPServer, error) {
	return Update.Call(ctx, m.c, req)
}

// Delete removes a server; an unknown name is not_found.
func (m *MCPServers) Delete(ctx context.Context, req *MCPServerDeleteRequest) (*MCPServer, error) {
	return Delete.Call(ctx, m.c, req)
}

// SetSecrets replaces a server's credentials; an unknown name is not_found.
func (m *MCPServers) SetSecrets(ctx context.Context, req *MCPServerSetSecretsRequest) (*MCPServer, error) {
	return SetSecrets.Call(ctx, m.c, req)
}

// ClaimOAuth returns the server with its secrets as they were, pending
// flow included, and clears the flow; an unknown, used or expired state is
// failed_precondition.
func (m *MCPServers) ClaimOAuth(ctx context.Context, req *MCPServerClaimOAuthRequest) (*MCPServer, error) {
	return ClaimOAuth.Call(ctx, m.c, req)
}
