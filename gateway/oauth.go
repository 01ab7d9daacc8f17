package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/vfs"
)

// subjectTokenRevoked tells every gateway replica that an access token was
// revoked (RFC 7009), so that it is refused before it expires.
const subjectTokenRevoked = "events.gateway.token_revoked"

// tokenRevoked is the event on subjectTokenRevoked.
type tokenRevoked struct {
	JTI   string    `json:"jti"`
	Until time.Time `json:"until"`
}

// oauthServer is the authorization server of SPEC §6: its state (clients,
// codes, refresh tokens, signing keys) lives in vfs-svc.
type oauthServer struct {
	store *vfs.OAuth
}

// startOAuth builds the token issuer and the authorization server once the
// NATS node is up.
func (s *Service) startOAuth() error {
	cfg := s.opts.Config
	store := vfs.NewOAuth(s.node.Client)
	keys, err := newSigningKeys(store, cfg.SecretKey, s.log.With("component", "oauth"))
	if err != nil {
		return err
	}
	if cfg.SecretKey == "" {
		s.log.Warn("SECRET_KEY is not set: OAuth access tokens are signed by a key of this replica only, until it restarts")
	}
	s.tokens = newTokenIssuer(keys, cfg.MCPPublicURL)
	if _, err := s.node.Conn.Subscribe(subjectTokenRevoked, func(msg *nats.Msg) {
		var ev tokenRevoked
		if json.Unmarshal(msg.Data, &ev) == nil && ev.JTI != "" {
			s.tokens.revoked.add(ev.JTI, ev.Until)
		}
	}); err != nil {
		return fmt.Errorf("subscribing to %s: %w", subjectTokenRevoked, err)
	}
	s.oauth = &oauthServer{store: store}
	return nil
}

// oauthRoutes registers the authorization server's endpoints.
func (s *Service) oauthRoutes(e *echo.Echo) {
	e.GET("/.well-known/jwks.json", s.jwks)
}

// jwks serves the public signing keys (RFC 7517).
func (s *Service) jwks(c echo.Context) error {
	keys, err := s.tokens.keys.jwks(c.Request().Context())
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=300")
	return c.JSON(http.StatusOK, map[string]any{"keys": keys})
}
