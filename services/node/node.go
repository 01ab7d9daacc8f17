// Package node is the NATS side every service shares: its own connection,
// its tracer provider, its micro service and a wire client, started and
// stopped as one.
package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mirobody/mirobody-go/services/buildinfo"
	"github.com/mirobody/mirobody-go/services/natsx"
	"github.com/mirobody/mirobody-go/services/svc"
	"github.com/mirobody/mirobody-go/services/telemetry"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Options configures Start.
type Options struct {
	// Name is the micro service name (vfs, registry, agent, gateway); it
	// is also the service's NATS identity (natsx.Grants).
	Name string
	// Description is shown by `nats micro info`.
	Description string
	// NATSURL is the broker to connect to.
	NATSURL string
	// CredsDir is NATS_CREDS_DIR: the service authenticates with the seed
	// named after it there (natsx.SeedFile). Empty means no credentials.
	CredsDir string
	// OTLPEndpoint exports traces when set.
	OTLPEndpoint string
	// Log is the service's logger. Required.
	Log *slog.Logger
	// Metrics receives the request metrics; nil means none.
	Metrics prometheus.Registerer
	// Liveness is the client's liveness window (wire.ClientOptions.Liveness):
	// zero means wire.DefaultLiveness, negative turns it off. Services pass
	// conf.Config.Liveness.
	Liveness time.Duration
	// Classify names the wire error of a handler error that is not one
	// (wire.ServiceOptions.Classify); nil means internal.
	Classify func(error) *wire.Error
}

// Node is one service's connection, tracer provider, micro service and client.
type Node struct {
	Conn    *nats.Conn
	Service *wire.Service
	Client  *wire.Client
	Tracer  *sdktrace.TracerProvider
	log     *slog.Logger
}

// Start connects and registers the micro service (with sys.ping and
// sys.info). Endpoints are added by the caller through n.Service.
func Start(ctx context.Context, opts Options) (*Node, error) {
	tp, err := telemetry.NewTracerProvider(ctx, telemetry.TracerOptions{Service: opts.Name, Version: buildinfo.Version, OTLPEndpoint: opts.OTLPEndpoint})
	if err != nil {
		return nil, err
	}
	var metrics *wire.Metrics
	if opts.Metrics != nil {
		if metrics, err = wire.NewMetrics(opts.Metrics); err != nil {
			return nil, err
		}
	}
	seed := ""
	if opts.CredsDir != "" {
		seed = natsx.SeedFile(opts.CredsDir, opts.Name)
	}
	nc, err := natsx.Connect(natsx.ConnectOptions{URL: opts.NATSURL, Name: opts.Name, SeedFile: seed,
		InboxPrefix: natsx.InboxPrefix(opts.Name), Log: opts.Log})
	if err != nil {
		_ = tp.Shutdown(ctx)
		return nil, err
	}
	ws, err := wire.NewService(nc, wire.ServiceOptions{Name: opts.Name, Version: buildinfo.Version,
		Description: opts.Description, Log: opts.Log, TracerProvider: tp, Metrics: metrics, Classify: opts.Classify})
	if err != nil {
		nc.Close()
		_ = tp.Shutdown(ctx)
		return nil, fmt.Errorf("registering %s: %w", opts.Name, err)
	}
	return &Node{Conn: nc, Service: ws, Tracer: tp, log: opts.Log,
		Client: wire.NewClient(wire.ClientOptions{Conn: nc, TracerProvider: tp, Liveness: opts.Liveness})}, nil
}

// Stop drains the endpoints, waits for handlers in flight, flushes the
// connection and the tracer.
func (n *Node) Stop(ctx context.Context) error {
	if n == nil {
		return nil
	}
	err := n.Service.Stop(ctx)
	// Flush so replies written by the last handlers reach the broker.
	if ferr := n.Conn.FlushTimeout(2 * time.Second); ferr != nil && !errors.Is(ferr, nats.ErrConnectionClosed) && n.Conn.IsConnected() {
		err = errors.Join(err, fmt.Errorf("flushing NATS: %w", ferr))
	}
	n.Conn.Close()
	return errors.Join(err, n.Tracer.Shutdown(ctx))
}

// Checks returns the NATS readiness check.
func (n *Node) Checks() []svc.Check {
	return []svc.Check{{Name: "nats", Probe: natsx.Probe(n.Conn)}}
}

// PingCheck returns a readiness check that pings another service over NATS.
func PingCheck(c *wire.Client, service string) svc.Check {
	return svc.Check{Name: service, Probe: func(ctx context.Context) error {
		_, err := wire.SysPing(service).Call(ctx, c, &wire.Empty{})
		return err
	}}
}
