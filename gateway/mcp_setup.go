package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/buildinfo"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
)

// startMCP builds the /mcp handler and its event subscriptions once the
// NATS node is up.
func (s *Service) startMCP() error {
	cfg := s.opts.Config
	keys, random, err := sessionKeys(cfg.MCPSessionKeys, cfg.SecretKey)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if random {
		s.log.Warn("neither MCP_SESSION_KEYS nor SECRET_KEY is set: MCP session ids are valid on this replica only, until it restarts")
	}
	seal, err := newSealer(keys, time.Duration(cfg.MCPSessionTTLS)*time.Second)
	if err != nil {
		return err
	}
	s.keys = newKeyCache()
	if _, err := s.node.Conn.Subscribe(accounts.KeyRevoked.Subject, func(*nats.Msg) { s.keys.reset() }); err != nil {
		return fmt.Errorf("subscribing to %s: %w", accounts.KeyRevoked.Subject, err)
	}
	revoked := newRevocations()
	if _, err := s.node.Conn.Subscribe(subjectSessionDeleted, func(msg *nats.Msg) {
		var ev sessionDeleted
		if json.Unmarshal(msg.Data, &ev) == nil && ev.Nonce != "" {
			revoked.add(ev.Nonce, ev.Until)
		}
	}); err != nil {
		return fmt.Errorf("subscribing to %s: %w", subjectSessionDeleted, err)
	}
	h, err := newHub(s.node.Conn)
	if err != nil {
		return err
	}
	s.hub = h
	// The subscriptions must reach the server before /mcp serves, or an
	// event right after start-up would miss its streams.
	if err := s.node.Conn.Flush(); err != nil {
		return fmt.Errorf("flushing the event subscriptions: %w", err)
	}
	lim := newLimits(limitsOptions{PerAccount: cfg.RateLimitAcct, PerIP: cfg.RateLimitIP, Streams: cfg.MCPMaxStreams,
		LocalOnly: loopbackURL(cfg.MCPPublicURL)})
	s.mcp = newMCPServer(mcpOptions{
		Registry:       registry.NewClient(s.node.Client),
		Conn:           s.node.Conn,
		Auth:           func(r *http.Request, token string) (*Principal, error) { return s.authenticate(r.Context(), token) },
		Sealer:         seal,
		Revoked:        revoked,
		Hub:            h,
		Limits:         lim,
		PublicURL:      cfg.MCPPublicURL,
		AllowedOrigins: cfg.AllowedOrigins,
		MaxBodyBytes:   int64(cfg.MaxRequestBytes),
		KeepAlive:      time.Duration(cfg.MCPKeepAliveS) * time.Second,
		Version:        buildinfo.Version,
		Log:            s.log.With("component", "mcp"),
	})
	return nil
}

// loopbackURL reports whether raw is a URL on localhost or a loopback IP.
func loopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && isLoopbackHost(u.Hostname())
}
