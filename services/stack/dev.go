package stack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/natsx"
	"github.com/mirobody/mirobody-go/services/pgcluster"
	"github.com/mirobody/mirobody-go/services/svc"
)

// devCredsDir is the folder under DEV_DIR with dev's NATS seeds.
const devCredsDir = "nats-creds"

// DevOptions configures Dev.
type DevOptions struct {
	Config *conf.Config
	Log    *slog.Logger
	// Metrics receives every service's metrics.
	Metrics prometheus.Registerer
	// Out receives the banner with URLs and the demo key.
	Out io.Writer
}

// Dev returns the all-in-one development stack: an embedded NATS server,
// a private Postgres cluster under DEV_DIR/pg (kept between runs), the four
// services, and a final step that ensures the demo account and prints the
// banner. Run it with svc.Run.
func Dev(opts DevOptions) ([]svc.Service, error) {
	cfg, log := opts.Config, opts.Log
	dir, err := filepath.Abs(cfg.DevDir)
	if err != nil {
		return nil, fmt.Errorf("resolving DEV_DIR: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating DEV_DIR: %w", err)
	}
	if cfg.SecretKey == "" {
		key, err := devSecret(filepath.Join(dir, "secret_key"))
		if err != nil {
			return nil, err
		}
		cfg.SecretKey = key
	}
	listen := cfg.NATSListen
	if listen == "" {
		u, err := url.Parse(cfg.NATSURL)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("config: NATS_URL: %q is not a nats://host:port URL", cfg.NATSURL)
		}
		listen = u.Host
	}
	// Every in-process service and the commands get their own identity;
	// the seeds stay between runs, so `mirobody keys` keeps working.
	if cfg.NATSCredsDir == "" {
		cfg.NATSCredsDir = filepath.Join(dir, devCredsDir)
	}
	keys, err := natsx.EnsureSeeds(cfg.NATSCredsDir)
	if err != nil {
		return nil, err
	}
	users, err := natsx.ServerUsers(keys)
	if err != nil {
		return nil, err
	}
	ns := natsx.NewServer(natsx.ServerOptions{Listen: listen, Users: users, Log: log})
	services := []svc.Service{ns, &Func{Label: "nats-url", StartFn: func() error {
		cfg.NATSURL = ns.ClientURL()
		return nil
	}}}
	if cfg.DatabaseURL == "" {
		cl := pgcluster.New(pgcluster.Options{Dir: filepath.Join(dir, "pg"), Log: log})
		services = append(services, &devPostgres{cluster: cl, cfg: cfg, dir: dir, log: log})
	}
	services = append(services, Build(cfg, log, opts.Metrics, Targets)...)
	services = append(services, &Func{Label: "demo", StartFn: func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		key, err := ensureDemo(ctx, cfg, log, filepath.Join(dir, "demo_key"))
		if err != nil {
			return err
		}
		printBanner(opts.Out, cfg, key)
		return nil
	}})
	return services, nil
}

// devPostgres starts the private cluster and points DATABASE_URL at it.
type devPostgres struct {
	cluster *pgcluster.Cluster
	cfg     *conf.Config
	dir     string
	log     *slog.Logger
}

func (d *devPostgres) Name() string { return "postgres" }

func (d *devPostgres) Start(ctx context.Context) error {
	err := d.cluster.Start(ctx)
	var ue *pgcluster.UnreachableError
	if errors.As(err, &ue) {
		// Running as root in a home folder closed to others: the postgres
		// user cannot enter it, so keep the cluster in a folder it can.
		alt := filepath.Join(os.TempDir(), "mirobody-dev-"+shortHash(d.dir), "pg")
		d.log.Warn("data directory unreachable for the postgres user; using another folder", "wanted", ue.Dir, "using", alt)
		if err := os.MkdirAll(filepath.Dir(alt), 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", alt, err)
		}
		_ = os.Chmod(filepath.Dir(alt), 0o755)
		d.cluster = pgcluster.New(pgcluster.Options{Dir: alt, Log: d.log})
		err = d.cluster.Start(ctx)
	}
	if err != nil {
		return err
	}
	if err := createDatabase(ctx, d.cluster.DSN("postgres"), "mirobody"); err != nil {
		_ = d.cluster.Stop(ctx)
		return err
	}
	d.cfg.DatabaseURL = d.cluster.DSN("mirobody")
	return nil
}

func (d *devPostgres) Stop(ctx context.Context) error { return d.cluster.Stop(ctx) }

func createDatabase(ctx context.Context, adminDSN, name string) error {
	conn, err := pgx.Connect(ctx, adminDSN)
	if err != nil {
		return fmt.Errorf("connecting to the dev cluster: %w", err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return fmt.Errorf("looking for database %s: %w", name, err)
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			return fmt.Errorf("creating database %s: %w", name, err)
		}
	}
	return nil
}

// devSecret reads the dev secret key, creating it on first run.
func devSecret(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		key := strings.TrimSpace(string(b))
		if err := conf.CheckSecretKey(key); err != nil {
			return "", fmt.Errorf("config: SECRET_KEY in %s: %w (delete the file to make a new one)", path, err)
		}
		return key, nil
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("generating SECRET_KEY: %w", err)
	}
	key := hex.EncodeToString(buf)
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("saving dev SECRET_KEY: %w", err)
	}
	return key, nil
}

func shortHash(s string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return fmt.Sprintf("%08x", h.Sum32())
}

func printBanner(w io.Writer, cfg *conf.Config, key string) {
	if w == nil {
		return
	}
	base := strings.TrimRight(cfg.MCPPublicURL, "/")
	host, port, _ := net.SplitHostPort(cfg.AdminAddr)
	if host == "" || host == "0.0.0.0" {
		host = "127.0.0.1"
	}
	fmt.Fprintf(w, `
Mirobody-Go dev stack is ready.

  Web app        %[1]s/app/   (sign in with the demo API key)
  MCP endpoint   %[1]s/mcp
  Chat API       %[1]s/api/chat
  Health         http://%[2]s/readyz   metrics: http://%[2]s/metrics
  NATS           %[3]s   (identities in %[6]s)
  Demo account   %[4]s
  Demo API key   %[5]s

  Try it:
    curl -s %[1]s/api/me -H "Authorization: Bearer %[5]s"

  MCP client config (Claude Desktop, Cursor, SDKs):
    {"mcpServers": {"mirobody": {"type": "http", "url": "%[1]s/mcp", "headers": {"Authorization": "Bearer %[5]s"}}}}

Press Ctrl-C to stop.
`, base, net.JoinHostPort(host, port), cfg.NATSURL, DemoEmail, key, cfg.NATSCredsDir)
}
