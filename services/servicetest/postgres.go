package servicetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mirobody/mirobody-go/services/pg"
	"github.com/mirobody/mirobody-go/services/pgcluster"
)

// EnvDatabaseURL names the variable that points tests at an existing server
// (an admin connection string, for example to its postgres database).
const EnvDatabaseURL = "TEST_DATABASE_URL"

var (
	mainUsed bool
	once     sync.Once
	adminDSN string
	startErr error
	cluster  *pgcluster.Cluster
	baseDir  string

	// durable is DurablePostgres's cluster.
	durable struct {
		once    sync.Once
		cluster *pgcluster.Cluster
		dir     string
		err     error
	}
)

// Main runs the package's tests and stops the private PostgreSQL clusters
// that Postgres and DurablePostgres may have started. Packages that call
// them use it:
//
//	func TestMain(m *testing.M) { servicetest.Main(m) }
func Main(m *testing.M) {
	mainUsed = true
	code := m.Run()
	for _, c := range []struct {
		cluster *pgcluster.Cluster
		dir     string
	}{{cluster, baseDir}, {durable.cluster, durable.dir}} {
		if c.cluster != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_ = c.cluster.Stop(ctx)
			cancel()
			_ = os.RemoveAll(c.dir)
		}
	}
	os.Exit(code)
}

// StartCluster starts a throwaway private cluster in a temp folder, with
// fsync off (tests need no durability), and returns it. The caller stops it
// and removes dir.
func StartCluster(ctx context.Context, log *slog.Logger) (c *pgcluster.Cluster, dir string, err error) {
	return startCluster(ctx, pgcluster.Options{Log: log, NoFsync: true})
}

func startCluster(ctx context.Context, opts pgcluster.Options) (c *pgcluster.Cluster, dir string, err error) {
	dir, err = os.MkdirTemp("", "mirobody-pg-")
	if err != nil {
		return nil, "", fmt.Errorf("creating cluster folder: %w", err)
	}
	// The postgres user (when we are root) must be able to enter it.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, "", fmt.Errorf("opening cluster folder: %w", err)
	}
	opts.Dir = filepath.Join(dir, "data")
	c = pgcluster.New(opts)
	if err := c.Start(ctx); err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", err
	}
	return c, dir, nil
}

func admin(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		if dsn := os.Getenv(EnvDatabaseURL); dsn != "" {
			adminDSN = dsn
			return
		}
		if !mainUsed {
			startErr = fmt.Errorf("servicetest.Postgres needs func TestMain(m *testing.M) { servicetest.Main(m) } in this package, so the private cluster is stopped")
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cluster, baseDir, startErr = StartCluster(ctx, nil)
		if startErr == nil {
			adminDSN = cluster.DSN("postgres")
		}
	})
	if startErr != nil {
		t.Fatalf("starting PostgreSQL for tests: %v", startErr)
	}
	return adminDSN
}

// DB is a fresh test database.
type DB struct {
	// DSN connects to the database.
	DSN string
	// Pool is open on the database and closed at cleanup.
	Pool *pgxpool.Pool
}

// Postgres creates a fresh database with migrations applied (nil means
// none), and drops it at cleanup. It never skips: without a server it fails
// and says how to install one.
func Postgres(t testing.TB, migrations Migrations) *DB {
	t.Helper()
	return database(t, admin(t), migrations)
}

// DurablePostgres is Postgres on a second private cluster that runs with
// fsync and synchronous_commit on, as `mirobody dev` and production do, for
// benchmarks of what a durable commit costs. The first call starts the
// cluster (some seconds); Main stops it.
func DurablePostgres(t testing.TB, migrations Migrations) *DB {
	t.Helper()
	durable.once.Do(func() {
		if !mainUsed {
			durable.err = fmt.Errorf("servicetest.DurablePostgres needs func TestMain(m *testing.M) { servicetest.Main(m) } in this package, so the cluster is stopped")
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		durable.cluster, durable.dir, durable.err = startCluster(ctx, pgcluster.Options{})
	})
	if durable.err != nil {
		t.Fatalf("starting durable PostgreSQL: %v", durable.err)
	}
	return database(t, durable.cluster.DSN("postgres"), migrations)
}

// database creates a fresh database on the server adm connects to.
func database(t testing.TB, adm string, migrations Migrations) *DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := "mb_test_" + randomHex(6)
	conn, err := pgx.Connect(ctx, adm)
	if err != nil {
		t.Fatalf("connecting to the test server: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, adm)
		if err != nil {
			t.Errorf("connecting to drop test database: %v", err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping test database: %v", err)
		}
	})
	dsn := withDatabase(t, adm, name)
	pool, err := pg.Open(ctx, pg.PoolOptions{DSN: dsn, MaxConns: 20})
	if err != nil {
		t.Fatalf("opening test database: %v", err)
	}
	t.Cleanup(pool.Close)
	if migrations != nil {
		if err := pg.Migrate(ctx, pool, migrations, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatalf("migrating test database: %v", err)
		}
	}
	return &DB{DSN: dsn, Pool: pool}
}

func withDatabase(t testing.TB, dsn, name string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parsing %s: %v", EnvDatabaseURL, err)
	}
	u.Path = "/" + name
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
