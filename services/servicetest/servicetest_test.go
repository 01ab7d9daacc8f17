package servicetest_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/mirobody/mirobody-go/services/servicetest"
)

func TestMain(m *testing.M) { servicetest.Main(m) }

func TestPostgresFreshDatabaseWithMigrations(t *testing.T) {
	migrations := fstest.MapFS{
		"00001_init.sql": {Data: []byte("-- +goose Up\nCREATE TABLE t (id int PRIMARY KEY);\nCREATE EXTENSION IF NOT EXISTS pg_trgm;\n")},
	}
	a := servicetest.Postgres(t, migrations)
	b := servicetest.Postgres(t, migrations)
	if a.DSN == b.DSN {
		t.Fatal("two calls returned the same database")
	}
	ctx := context.Background()
	if _, err := a.Pool.Exec(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := b.Pool.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 0 {
		t.Fatalf("databases are not isolated: n=%d err=%v", n, err)
	}
	if err := a.Pool.QueryRow(ctx, "SELECT similarity('abc', 'abd') > 0").Scan(new(bool)); err != nil {
		t.Fatalf("pg_trgm not available: %v", err)
	}
}

func TestNATS(t *testing.T) {
	url := servicetest.NATS(t)
	nc := servicetest.Conn(t, url)
	if !nc.IsConnected() {
		t.Fatal("not connected")
	}
}
