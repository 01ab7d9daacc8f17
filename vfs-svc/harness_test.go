package vfssvc

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/vfs/userdata"
	"github.com/mirobody/mirobody-go/services/wire"
	"github.com/mirobody/mirobody-go/vfs-svc/migrations"
)

func TestMain(m *testing.M) { servicetest.Main(m) }

// env is a running vfs-svc on a fresh database and NATS server.
type env struct {
	cfg    *conf.Config
	url    string
	svc    *Service
	pool   *pgxpool.Pool
	client *wire.Client
	fs     *files.FS
	data   *userdata.Data
}

// start runs vfs-svc for the test on a fresh database; tweak adjusts the
// config first.
func start(t testing.TB, tweak func(*conf.Config)) *env {
	t.Helper()
	return startOn(t, servicetest.Postgres(t, migrations.FS), tweak)
}

// startOn runs vfs-svc for the test on db, migrated.
func startOn(t testing.TB, db *servicetest.DB, tweak func(*conf.Config)) *env {
	t.Helper()
	url := servicetest.NATS(t)
	res, err := conf.Load(conf.LoadOptions{LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	cfg := res.Config
	cfg.NATSURL, cfg.DatabaseURL = url, db.DSN
	cfg.SkillDirs = []string{t.TempDir()}
	if tweak != nil {
		tweak(cfg)
	}
	s := New(Options{Config: cfg, Log: servicetest.Logger(t)})
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("starting vfs-svc: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	c := servicetest.Client(t, url)
	return &env{cfg: cfg, url: url, svc: s, pool: db.Pool, client: c, fs: files.NewFS(c), data: userdata.NewData(c)}
}

// account creates an account and returns its id.
func (e *env) account(t testing.TB) string {
	t.Helper()
	id := uuid.NewString()
	if _, err := e.pool.Exec(context.Background(), `INSERT INTO accounts (id, email) VALUES ($1, $2)`, id, id+"@example.com"); err != nil {
		t.Fatal(err)
	}
	return id
}

func ctx(t testing.TB) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// wantCode fails unless err carries code (an empty code means no error).
func wantCode(t testing.TB, err error, code wire.Code) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	var werr *wire.Error
	if !errors.As(err, &werr) || werr.Code != code {
		t.Fatalf("got error %v, want code %s", err, code)
	}
}
