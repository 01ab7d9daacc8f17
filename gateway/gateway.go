// Package gateway is the HTTP edge of Mirobody: it terminates HTTP,
// authenticates callers, and turns requests into NATS calls to registry-svc,
// agent-svc and vfs-svc. It keeps no state of its own, so any replica serves
// any request. This package holds the routes, the REST API (api_*.go) and
// the web app; the MCP transport, the OAuth authorization server and
// authentication with the rate limits are internal packages (design.md).
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mirobody/mirobody-go/gateway/internal/authn"
	"github.com/mirobody/mirobody-go/gateway/internal/httpobs"
	"github.com/mirobody/mirobody-go/gateway/internal/mcpserver"
	"github.com/mirobody/mirobody-go/gateway/internal/oauth"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/node"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/seal"
	"github.com/mirobody/mirobody-go/services/svc"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Name is the micro service name (the gateway serves only sys.ping/info on NATS).
const Name = "gateway"

// Options configures the gateway.
type Options struct {
	// Config supplies HTTP_ADDR, NATS_URL and the gateway's keys.
	Config *conf.Config
	// Log is the service logger. Required.
	Log *slog.Logger
	// Metrics receives the service's Prometheus metrics; nil means none.
	Metrics prometheus.Registerer
}

// Service is the gateway.
type Service struct {
	opts     Options
	log      *slog.Logger
	node     *node.Node
	accounts *accounts.Accounts
	registry *registry.Client
	auth     *authn.Authenticator
	limits   *authn.Limits
	proxies  *authn.Proxies
	oauth    *oauth.Server
	mcp      *mcpserver.Server
	// flows seals the cookies that bind external servers' OAuth flows to
	// a browser.
	flows   *seal.Box
	metrics *httpobs.Metrics // nil: not measured
	srv     *http.Server
	ln      net.Listener
}

// New returns a gateway that is not started.
func New(opts Options) *Service {
	return &Service{opts: opts, log: opts.Log.With("component", "gateway")}
}

// Name implements svc.Service.
func (s *Service) Name() string { return "gateway" }

// Addr returns the bound HTTP address once started.
func (s *Service) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Start connects to NATS and starts serving HTTP.
func (s *Service) Start(ctx context.Context) error {
	cfg := s.opts.Config
	n, err := node.Start(ctx, node.Options{Name: Name, Description: "HTTP edge: MCP, chat API, auth",
		NATSURL: cfg.NATSURL, CredsDir: cfg.NATSCredsDir, OTLPEndpoint: cfg.OTLPEndpoint, Log: s.log, Metrics: s.opts.Metrics,
		Liveness: cfg.Liveness()})
	if err != nil {
		return err
	}
	s.node = n
	if s.opts.Metrics != nil {
		if s.metrics, err = httpobs.NewMetrics(s.opts.Metrics); err != nil {
			_ = n.Stop(ctx)
			return err
		}
	}
	if err := s.startParts(); err != nil {
		_ = n.Stop(ctx)
		return err
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		s.mcp.Close()
		_ = n.Stop(ctx)
		return fmt.Errorf("listening on HTTP_ADDR %s: %w", cfg.HTTPAddr, err)
	}
	s.ln = authn.LimitConns(ln, authn.ConnLimitOptions{PerIP: cfg.MaxConnsPerIP, Proxies: s.proxies,
		LocalOnly: authn.LoopbackURL(cfg.MCPPublicURL)})
	// Every request gets a server span (continuing the caller's traceparent),
	// and the NATS calls made under its context carry it on.
	handler := httpobs.ServerSpans(httpobs.TraceIDs(s.metrics.Wrap(s.routes())), n.Tracer, cfg.OTLPEndpoint != "")
	// ReadTimeout bounds reading the request: net/http lifts it once the
	// body is read, so answers that run long are not cut. No WriteTimeout:
	// streams write for as long as their turn or call runs, and each of
	// those has a deadline of its own.
	read := time.Duration(cfg.HTTPReadTimeoutS) * time.Second
	s.srv = &http.Server{Handler: handler, ReadHeaderTimeout: min(10*time.Second, read),
		ReadTimeout: read, IdleTimeout: time.Duration(cfg.HTTPIdleTimeoutS) * time.Second}
	go func() {
		if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server failed", "err", err)
		}
	}()
	return nil
}

// Stop stops accepting requests, waits for those in flight, then leaves NATS.
func (s *Service) Stop(ctx context.Context) error {
	var err error
	if s.mcp != nil {
		// Long streams end first, or Shutdown would wait for them until
		// the grace period runs out.
		s.mcp.Close()
	}
	if s.srv != nil {
		err = s.srv.Shutdown(ctx)
	}
	if s.mcp != nil {
		// Tool calls running as tasks need NATS to record their end.
		s.mcp.StopTasks(ctx)
	}
	return errors.Join(err, s.node.Stop(ctx))
}

// Checks implements svc.Checker. The gateway is ready when NATS is: it
// answers for the services it calls even while they are down (503
// unavailable, and /mcp's Go built-ins need nothing but the registry), so
// their health is detail for /healthz and the metrics, not readiness.
func (s *Service) Checks() []svc.Check {
	checks := s.node.Checks()
	for _, dep := range []string{"registry", "vfs", "agent"} {
		c := node.PingCheck(s.node.Client, dep)
		c.Detail = true
		checks = append(checks, c)
	}
	return checks
}

// routes is the gateway's HTTP surface. /mcp is served by the MCP
// transport and everything else by echo; each sits behind authn's
// Middleware, which verifies a presented token once per request (so
// guessing costs the per-IP budget on every route, unknown ones included)
// and which each side lets render a refusal in its own protocol.
func (s *Service) routes() http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.httpError
	e.Use(httpobs.EchoRoute)
	e.GET("/.well-known/oauth-protected-resource", s.protectedResourceMetadata)
	e.GET("/.well-known/oauth-protected-resource/mcp", s.protectedResourceMetadata)
	api := e.Group("/api", s.requireAPI)
	api.GET("/me", s.me)
	s.sessionRoutes(e, api)
	s.modelRoutes(api)
	s.dataRoutes(api)
	s.chatRoutes(api)
	s.webRoutes(e, api)
	s.oauth.Routes(e)
	s.mcpServerRoutes(e, api)
	mcp, rest := s.auth.Middleware(s.mcp, s.mcp.Reject), s.auth.Middleware(e, s.reject)
	// A path comparison rather than an http.ServeMux, whose path cleaning
	// would redirect requests echo answers itself.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/mcp" {
			httpobs.SetRoute(r.Context(), "/mcp")
			mcp.ServeHTTP(w, r)
			return
		}
		rest.ServeHTTP(w, r)
	})
}

// requireAPI admits a request to /api: a token with scope api, within its
// account's budget, which it shares with /mcp.
func (s *Service) requireAPI(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p, err := authn.Require(c.Request().Context(), "api")
		if err != nil {
			return err
		}
		if wait, ok := s.limits.Admit(c.Request(), p); !ok {
			c.Response().Header().Set("Retry-After", authn.RetryAfter(wait))
			return wire.Errorf(wire.ResourceExhausted, "rate limit exceeded, retry later")
		}
		return next(c)
	}
}

// limitIP applies the anonymous per-IP budget to a route without bearer
// auth (the external servers' OAuth callback).
func (s *Service) limitIP(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if wait, ok := s.limits.Admit(c.Request(), nil); !ok {
			c.Response().Header().Set("Retry-After", authn.RetryAfter(wait))
			return wire.Errorf(wire.ResourceExhausted, "rate limit exceeded, retry later")
		}
		return next(c)
	}
}

// principal is the caller of an /api request (requireAPI admitted it).
func principal(c echo.Context) *authn.Principal {
	p, _ := authn.FromContext(c.Request().Context())
	return p
}

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
