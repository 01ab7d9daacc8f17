// Package gateway is the HTTP edge of Mirobody: it terminates HTTP,
// authenticates callers, and turns requests into NATS calls to registry-svc,
// agent-svc and vfs-svc. It keeps no state of its own, so any replica serves
// any request.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/node"
	"github.com/mirobody/mirobody-go/services/svc"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
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
	keys     *keyCache
	tokens   *tokenIssuer
	oauth    *oauthServer
	hub      *hub
	mcp      *mcpServer
	echo     *echo.Echo
	srv      *http.Server
	ln       net.Listener
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
		NATSURL: cfg.NATSURL, CredsDir: cfg.NATSCredsDir, OTLPEndpoint: cfg.OTLPEndpoint, Log: s.log, Metrics: s.opts.Metrics})
	if err != nil {
		return err
	}
	s.node = n
	s.accounts = accounts.NewAccounts(n.Client)
	if err := s.startOAuth(); err != nil {
		_ = n.Stop(ctx)
		return err
	}
	if err := s.startMCP(); err != nil {
		_ = n.Stop(ctx)
		return err
	}
	s.echo = s.routes()
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		s.hub.close()
		_ = n.Stop(ctx)
		return fmt.Errorf("listening on HTTP_ADDR %s: %w", cfg.HTTPAddr, err)
	}
	s.ln = ln
	// Every request gets a server span (continuing the caller's traceparent),
	// and the NATS calls made under its context carry it on.
	handler := otelhttp.NewHandler(s.echo, "gateway",
		otelhttp.WithTracerProvider(n.Tracer), otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " " + r.URL.Path }))
	// ReadTimeout bounds reading the request: net/http lifts it once the
	// body is read, so answers that run long are not cut. No WriteTimeout:
	// streams write for as long as their turn or call runs, and each of
	// those has a deadline of its own.
	read := time.Duration(cfg.HTTPReadTimeoutS) * time.Second
	s.srv = &http.Server{Handler: handler, ReadHeaderTimeout: min(10*time.Second, read),
		ReadTimeout: read, IdleTimeout: time.Duration(cfg.HTTPIdleTimeoutS) * time.Second}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server failed", "err", err)
		}
	}()
	return nil
}

// Stop stops accepting requests, waits for those in flight, then leaves NATS.
func (s *Service) Stop(ctx context.Context) error {
	var err error
	if s.hub != nil {
		// Long streams end first, or Shutdown would wait for them until
		// the grace period runs out.
		s.hub.close()
	}
	if s.srv != nil {
		err = s.srv.Shutdown(ctx)
	}
	return errors.Join(err, s.node.Stop(ctx))
}

// Checks implements svc.Checker: NATS plus every service the gateway calls.
func (s *Service) Checks() []svc.Check {
	checks := s.node.Checks()
	for _, dep := range []string{"registry", "vfs", "agent"} {
		checks = append(checks, node.PingCheck(s.node.Client, dep))
	}
	return checks
}

func (s *Service) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.httpError
	e.Use(s.limitInvalidTokens)
	mcpHandler := echo.WrapHandler(s.mcp)
	e.Match([]string{http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodPut, http.MethodPatch, http.MethodOptions}, "/mcp", mcpHandler)
	e.GET("/.well-known/oauth-protected-resource", s.protectedResourceMetadata)
	e.GET("/.well-known/oauth-protected-resource/mcp", s.protectedResourceMetadata)
	api := e.Group("/api", s.requireAuth("api"), s.rateLimit)
	api.GET("/me", s.me)
	s.dataRoutes(api)
	s.chatRoutes(api)
	s.webRoutes(e, api)
	s.oauthRoutes(e)
	s.mcpServerRoutes(e, api)
	return e
}
