// Package vfssvc is vfs-svc: the only service that opens Postgres. It holds
// accounts and API keys, the virtual filesystem and the user data stores,
// and serves them over NATS.
package vfssvc

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/node"
	"github.com/mirobody/mirobody-go/services/pg"
	"github.com/mirobody/mirobody-go/services/seal"
	"github.com/mirobody/mirobody-go/services/svc"
	"github.com/mirobody/mirobody-go/vfs-svc/migrations"
)

// Name is the micro service name and subject prefix.
const Name = "vfs"

// Options configures the service.
type Options struct {
	// Config supplies NATS_URL, DATABASE_URL and the VFS limits.
	Config *conf.Config
	// Log is the service logger. Required.
	Log *slog.Logger
	// Metrics receives the service's Prometheus metrics; nil means none.
	Metrics prometheus.Registerer
}

// Service is vfs-svc.
type Service struct {
	opts Options
	log  *slog.Logger
	pool *pgxpool.Pool
	node *node.Node
	// VFS limits and the read-only skills mount, from the config.
	maxFile int
	quota   int
	mount   *skillMount
	// secrets seals MCP server credentials; nil without SECRET_KEY.
	secrets *seal.Box
	// dummyHash is checked when a login names no usable account, so
	// that unknown emails take as long as wrong passwords.
	dummyHash string
	// passwordChecks counts argon2id password checks.
	passwordChecks atomic.Int64
	// stopPrune ends the audit retention loop; pruned is closed when it has.
	stopPrune context.CancelFunc
	pruned    chan struct{}
	// groups batches each account's file changes into shared transactions.
	groups groups
}

// New returns a vfs-svc that is not started.
func New(opts Options) *Service {
	cfg := opts.Config
	return &Service{
		opts:    opts,
		log:     opts.Log.With("component", "vfs-svc"),
		maxFile: cfg.VFSMaxFileBytes,
		quota:   cfg.VFSQuotaBytes,
		mount:   &skillMount{dirs: cfg.SkillDirs, maxFile: int64(cfg.VFSMaxFileBytes)},
	}
}

// Name implements svc.Service.
func (s *Service) Name() string { return "vfs-svc" }

// Start opens the pool, applies migrations and serves the endpoints.
func (s *Service) Start(ctx context.Context) error {
	cfg := s.opts.Config
	if cfg.DatabaseURL == "" {
		return errors.New("config: DATABASE_URL: vfs-svc needs a database")
	}
	for _, err := range conf.MissingDirs(cfg.SkillDirs) {
		s.log.Warn("a SKILL_DIRS folder is missing; /skills shows none of its skills", "err", err)
	}
	pool, err := pg.Open(ctx, pg.PoolOptions{DSN: cfg.DatabaseURL, MaxConns: cfg.DBMaxConns})
	if err != nil {
		return err
	}
	if err := pg.Migrate(ctx, pool, migrations.FS, s.log); err != nil {
		pool.Close()
		return err
	}
	s.pool = pool
	if s.dummyHash, err = hashPassword(rand.Text()); err != nil {
		pool.Close()
		return err
	}
	if s.secrets, err = secretsBox(cfg.SecretKey); err != nil {
		pool.Close()
		return err
	}
	n, err := node.Start(ctx, node.Options{Name: Name, Description: "virtual filesystem, accounts and user data",
		NATSURL: cfg.NATSURL, CredsDir: cfg.NATSCredsDir, OTLPEndpoint: cfg.OTLPEndpoint, Log: s.log, Metrics: s.opts.Metrics,
		Liveness: cfg.Liveness(),
		Classify: pg.Classify})
	if err != nil {
		pool.Close()
		return err
	}
	s.node = n
	if err := s.register(); err != nil {
		_ = s.Stop(ctx)
		return fmt.Errorf("registering vfs endpoints: %w", err)
	}
	return nil
}

// Stop drains the endpoints, then closes the pool.
func (s *Service) Stop(ctx context.Context) error {
	if s.stopPrune != nil {
		s.stopPrune()
		<-s.pruned
		s.stopPrune = nil
	}
	err := s.node.Stop(ctx)
	s.node = nil
	if s.pool != nil {
		s.pool.Close()
		s.pool = nil
	}
	return err
}

// Checks implements svc.Checker.
func (s *Service) Checks() []svc.Check {
	return append(s.node.Checks(), svc.Check{Name: "postgres", Probe: pg.Probe(s.pool)})
}

func (s *Service) register() error {
	svc := s.node.Service
	return errors.Join(
		s.registerAccounts(svc),
		s.registerFS(svc),
		s.registerSessions(svc),
		s.registerOAuth(svc),
		s.registerMCPServers(svc),
		s.registerData(svc),
		s.registerRevocations(svc),
		s.registerAudit(svc),
		s.registerTasks(svc),
	)
}
