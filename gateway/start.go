package gateway

import (
	"fmt"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/gateway/internal/authn"
	"github.com/mirobody/mirobody-go/gateway/internal/mcpserver"
	"github.com/mirobody/mirobody-go/gateway/internal/oauth"
	"github.com/mirobody/mirobody-go/services/buildinfo"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// startParts builds the authorization server, authentication with the
// shared rate limits, and the /mcp transport once the NATS node is up.
func (s *Service) startParts() error {
	cfg := s.opts.Config
	bus := s.node.Client
	s.accounts = accounts.NewAccounts(bus)
	s.registry = registry.NewClient(bus)
	o, err := oauth.New(oauth.Options{Bus: bus, Conn: s.node.Conn, PublicURL: cfg.MCPPublicURL, SecretKey: cfg.SecretKey,
		AllowPrivateClients: cfg.MCPClientAllowPriv, PerIP: cfg.RateLimitIP, PerAccount: cfg.RateLimitAcct,
		Log: s.log.With("component", "oauth")})
	if err != nil {
		return err
	}
	s.oauth = o
	s.proxies, err = authn.NewProxies(cfg.TrustedProxies, cfg.TrustedHeader)
	if err != nil {
		return err
	}
	if s.flows, err = newFlowBox(cfg.SecretKey); err != nil {
		return err
	}
	s.limits = authn.NewLimits(authn.LimitsOptions{PerAccount: cfg.RateLimitAcct, PerIP: cfg.RateLimitIP,
		Streams: cfg.MCPMaxStreams, LocalOnly: authn.LoopbackURL(cfg.MCPPublicURL)})
	s.auth, err = authn.New(authn.Options{Keys: s.accounts, Tokens: o.Tokens(), Sessions: o,
		SessionCookie: oauth.WebSessionCookie, SessionPath: "/api", Limits: s.limits, Proxies: s.proxies, Metrics: s.opts.Metrics})
	if err != nil {
		return fmt.Errorf("registering the auth metrics: %w", err)
	}
	if _, err := s.node.Conn.Subscribe(accounts.KeyRevoked.Subject, func(*nats.Msg) { s.auth.ForgetKeys() }); err != nil {
		return fmt.Errorf("subscribing to %s: %w", accounts.KeyRevoked.Subject, err)
	}
	s.mcp, err = mcpserver.New(mcpserver.Options{
		Bus:            bus,
		Conn:           s.node.Conn,
		SessionKeys:    cfg.MCPSessionKeys,
		SecretKey:      cfg.SecretKey,
		SessionTTL:     time.Duration(cfg.MCPSessionTTLS) * time.Second,
		Limits:         s.limits,
		ToolTimeout:    cfg.ToolTimeout,
		Codes:          jsonrpcCode,
		PublicURL:      cfg.MCPPublicURL,
		AllowedOrigins: cfg.AllowedOrigins,
		MaxBodyBytes:   int64(cfg.MaxRequestBytes),
		KeepAlive:      time.Duration(cfg.MCPKeepAliveS) * time.Second,
		TaskTTL:        time.Duration(cfg.MCPTaskTTLS) * time.Second,
		Version:        buildinfo.Version,
		Log:            s.log.With("component", "mcp"),
	})
	return err
}

// jsonrpcCode is the JSON-RPC column of the code table, for the transport.
func jsonrpcCode(err error) (wire.Code, int) {
	code, m := mapCode(err)
	return code, m.JSONRPC
}

// reject renders a request authn refused on a route other than /mcp.
func (s *Service) reject(w http.ResponseWriter, r *http.Request, err error) {
	s.writeAPIError(w, r, r.URL.Path, err)
}
