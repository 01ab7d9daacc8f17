// Package oauth is the gateway's OAuth 2.1 authorization server (the
// endpoints, pages, clients and signing keys) and the issuer and verifier of
// its JWT access tokens (jwt.go), which authn uses to authenticate /mcp.
package oauth

import (
	"crypto/rand"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/gateway/internal/authn"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Lifetimes of the authorization server (gateway/design.md "Tokens").
const (
	codeTTL    = 60 * time.Second
	refreshTTL = 30 * 24 * time.Hour
	// requestTTL bounds how long a login or consent page stays usable.
	requestTTL = 10 * time.Minute
	// loginTTL is how long the login page's session cookie lasts.
	loginTTL = 12 * time.Hour
)

// scopeDescriptions are the scopes a client may ask for, as the consent
// page words them.
var scopeDescriptions = map[string]string{"mcp": "use your Mirobody tools and data through MCP"}

// Server is the authorization server of the gateway (design.md "OAuth
// authorization server"). It keeps no state of its own: clients, codes,
// refresh tokens and signing keys live in vfs-svc, and the pages carry
// their request sealed.
type Server struct {
	store    *accounts.OAuth
	accounts *accounts.Accounts
	// logins counts login attempts for the lockout.
	logins  *accounts.Revocations
	tokens  *Tokens
	box     *box
	clients *clientResolver
	limits  *authn.Limits
	issuer  string
	// secure marks cookies Secure (the public URL is https).
	secure bool
	log    *slog.Logger
	now    func() time.Time
}

// Options configures the authorization server.
type Options struct {
	// Bus reaches vfs-svc; Conn carries the token revocation events.
	Bus  *wire.Client
	Conn *nats.Conn
	// PublicURL is the gateway's public base URL: the issuer, and with
	// /mcp the audience of its tokens.
	PublicURL string
	// SecretKey seals signing keys and page state; "" means a random key
	// per process (one replica only, warned).
	SecretKey string
	// AllowPrivateClients lets Client ID Metadata Documents live on
	// private addresses (MCP_CLIENT_ALLOW_PRIVATE).
	AllowPrivateClients bool
	// PerIP is the /oauth budget per client IP and PerAccount the login
	// attempts per email, requests per minute; 0 disables either.
	PerIP, PerAccount int
	// Log is the component logger. Required.
	Log *slog.Logger
}

// New builds the token issuer and the authorization server, and subscribes
// to token revocations, once the NATS node is up.
func New(opts Options) (*Server, error) {
	log := opts.Log
	store := accounts.NewOAuth(opts.Bus)
	keys, err := newSigningKeys(store, opts.SecretKey, log)
	if err != nil {
		return nil, err
	}
	pageKey := make([]byte, 32)
	if opts.SecretKey == "" {
		log.Warn("SECRET_KEY is not set: OAuth tokens and login pages are valid on this replica only, until it restarts")
		_, _ = rand.Read(pageKey)
	} else {
		pageKey = []byte(opts.SecretKey)
	}
	b, err := newBox(pageKey)
	if err != nil {
		return nil, err
	}
	revoked, err := newRevocations(opts.Bus, opts.Conn, log)
	if err != nil {
		return nil, err
	}
	tokens := newTokens(keys, revoked, opts.PublicURL)
	return &Server{
		store: store, accounts: accounts.NewAccounts(opts.Bus), logins: accounts.NewRevocations(opts.Bus), tokens: tokens, box: b,
		clients: newClientResolver(store, opts.AllowPrivateClients, log),
		limits:  authn.NewLimits(authn.LimitsOptions{PerAccount: opts.PerAccount, PerIP: opts.PerIP}),
		issuer:  tokens.issuer, secure: strings.HasPrefix(opts.PublicURL, "https://"),
		log: log, now: time.Now,
	}, nil
}

// Tokens returns the issuer and verifier of the server's access tokens.
func (o *Server) Tokens() *Tokens { return o.tokens }

// Routes registers the authorization server's endpoints. Those that
// browser-based clients call with fetch allow any origin: they take no
// cookies, so CORS protects nothing there.
func (o *Server) Routes(e *echo.Echo) {
	open := middleware.CORSWithConfig(middleware.CORSConfig{AllowOrigins: []string{"*"},
		AllowHeaders: []string{echo.HeaderContentType, echo.HeaderAuthorization, "MCP-Protocol-Version"}})
	for _, path := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		e.GET(path, o.metadata, open)
		e.OPTIONS(path, noContent, open)
	}
	e.GET("/.well-known/jwks.json", o.jwks, open)
	e.OPTIONS("/.well-known/jwks.json", noContent, open)
	// Every /oauth request is a small form or JSON document.
	g := e.Group("/oauth", o.rateLimit, middleware.BodyLimit("64K"))
	g.GET("/authorize", o.authorize)
	g.POST("/login", o.login)
	g.POST("/consent", o.consent)
	for path, h := range map[string]echo.HandlerFunc{"/token": o.token, "/register": o.register, "/revoke": o.revoke} {
		g.POST(path, h, open)
		g.OPTIONS(path, noContent, open)
	}
}

func noContent(c echo.Context) error { return c.NoContent(http.StatusNoContent) }

// asMetadata is the RFC 8414 authorization server metadata.
type asMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	RevocationEndpoint                string   `json:"revocation_endpoint"`
	JWKSURI                           string   `json:"jwks_uri"`
	ScopesSupported                   []string `json:"scopes_supported"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	ResponseModesSupported            []string `json:"response_modes_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	RevocationAuthMethodsSupported    []string `json:"revocation_endpoint_auth_methods_supported"`
	AuthorizationResponseISS          bool     `json:"authorization_response_iss_parameter_supported"`
	ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported"`
}

// metadata answers /.well-known/oauth-authorization-server (and the OpenID
// discovery path some clients try first).
func (o *Server) metadata(c echo.Context) error {
	b := o.issuer
	c.Response().Header().Set("Cache-Control", "public, max-age=3600")
	return c.JSON(http.StatusOK, asMetadata{
		Issuer: b, AuthorizationEndpoint: b + "/oauth/authorize", TokenEndpoint: b + "/oauth/token",
		RegistrationEndpoint: b + "/oauth/register", RevocationEndpoint: b + "/oauth/revoke", JWKSURI: b + "/.well-known/jwks.json",
		ScopesSupported: []string{"mcp"}, ResponseTypesSupported: []string{"code"}, ResponseModesSupported: []string{"query"},
		GrantTypesSupported: []string{"authorization_code", "refresh_token"}, CodeChallengeMethodsSupported: []string{"S256"},
		TokenEndpointAuthMethodsSupported: []string{"none"}, RevocationAuthMethodsSupported: []string{"none"},
		AuthorizationResponseISS: true, ClientIDMetadataDocumentSupported: true,
	})
}

// jwks serves the public signing keys (RFC 7517).
func (o *Server) jwks(c echo.Context) error {
	keys, err := o.tokens.keys.jwks(c.Request().Context())
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=300")
	return c.JSON(http.StatusOK, map[string]any{"keys": keys})
}

// rateLimit applies the per-IP budget to /oauth/* (gateway/design.md "OAuth
// authorization server"). It has its own buckets: a client's OAuth dance does
// not eat its /mcp budget.
func (o *Server) rateLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if wait, ok := o.limits.Allow("ip:"+authn.ClientIP(c.Request()), false); !ok {
			c.Response().Header().Set("Retry-After", authn.RetryAfter(wait))
			return oauthFail(c, http.StatusTooManyRequests, "temporarily_unavailable", "rate limit exceeded, retry later")
		}
		return next(c)
	}
}

// oauthError is the RFC 6749 §5.2 error body.
type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// oauthFail writes an OAuth error response.
func oauthFail(c echo.Context, status int, code, desc string) error {
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(status, oauthError{Error: code, Description: desc})
}
