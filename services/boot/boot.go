// Package boot holds the start-up steps every binary shares: flags, config,
// logger, and the admin listener around svc.Run. It keeps each cmd/main.go
// to a few lines.
package boot

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/svc"
	"github.com/mirobody/mirobody-go/services/telemetry"
)

// Env is what a binary needs before it builds its services.
type Env struct {
	Config  *conf.Config
	Log     *slog.Logger
	Metrics *prometheus.Registry
}

// Setup parses --config from args, loads the configuration and builds the
// logger. Unknown keys are logged as warnings.
func Setup(name string, args []string, stderr io.Writer) (*Env, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "config file (default: $MIROBODY_CONFIG or ./config.yaml)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return Load(*path, stderr)
}

// Load loads the configuration at path (empty: the default places) and
// builds the logger.
func Load(path string, stderr io.Writer) (*Env, error) {
	res, err := conf.Load(conf.LoadOptions{Path: path})
	if err != nil {
		return nil, err
	}
	log, err := telemetry.NewLogger(telemetry.LogOptions{Level: res.Config.LogLevel, Format: res.Config.LogFormat, Writer: stderr})
	if err != nil {
		return nil, fmt.Errorf("config: LOG_LEVEL/LOG_FORMAT: %w", err)
	}
	for _, w := range res.Warnings {
		log.Warn("config warning", "detail", w)
	}
	return &Env{Config: res.Config, Log: log, Metrics: telemetry.NewRegistry()}, nil
}

// Run serves the admin listener and runs services until SIGTERM/SIGINT.
func (e *Env) Run(ctx context.Context, services ...svc.Service) error {
	admin := svc.NewAdmin(svc.AdminOptions{Addr: e.Config.AdminAddr, Registry: e.Metrics, Log: e.Log})
	return svc.Run(ctx, svc.Options{
		Services: services,
		Admin:    admin,
		Grace:    time.Duration(e.Config.ShutdownS) * time.Second,
		Log:      e.Log,
		OnReady: func() {
			e.Log.Info("ready", "admin", "http://"+admin.Addr())
		},
	})
}
