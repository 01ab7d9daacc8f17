package vfssvc

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Concurrent changes of one account share transactions (group commit), yet
// behave as if serialised: the quota holds exactly, a create-only write
// to one path succeeds once, a failed change in a group leaves the others
// alone, and the usage row equals what is stored.
func TestGroupCommitConcurrentChanges(t *testing.T) {
	const quota, size, writers = 1000, 100, 40
	e := start(t, func(c *conf.Config) { c.VFSMaxFileBytes, c.VFSQuotaBytes = size, quota })
	c := ctx(t)
	sc := files.Scope{AccountID: e.account(t), SessionID: "s"}

	tests := []struct {
		name string
		// write is writer i's request; stored is a path the subtests
		// before stored (which writers won the quota race is chance).
		write func(i int, stored string) *files.WriteRequest
		// wantOK is how many writes succeed; the others fail with wantErr.
		wantOK  int
		wantErr wire.Code
	}{
		{"quota", func(i int, _ string) *files.WriteRequest {
			return &files.WriteRequest{Scope: sc, Path: fmt.Sprintf("/q/%02d", i), Content: strings.Repeat("x", size)}
		}, quota / size, wire.ResourceExhausted},
		{"create-only race", func(_ int, stored string) *files.WriteRequest {
			return &files.WriteRequest{Scope: sc, Path: stored, Content: "y", Overwrite: false}
		}, 0, wire.AlreadyExists},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stored string
			if err := e.pool.QueryRow(c, `SELECT coalesce(min(path), '') FROM vfs_files WHERE account_id = $1`, sc.AccountID).Scan(&stored); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make([]error, writers)
			for i := range writers {
				wg.Go(func() { _, errs[i] = e.fs.Write(c, tt.write(i, stored)) })
			}
			wg.Wait()
			ok := 0
			for i, err := range errs {
				switch {
				case err == nil:
					ok++
				case !wire.IsCode(err, tt.wantErr):
					t.Errorf("writer %d: %v, want %s", i, err, tt.wantErr)
				}
			}
			if ok != tt.wantOK {
				t.Errorf("%d writes succeeded, want %d", ok, tt.wantOK)
			}
		})
	}

	// Deleting frees quota for exactly as many new files, concurrently.
	// Which writers won the quota race is chance: delete three that did.
	var stored []string
	rows, err := e.pool.Query(c, `SELECT path FROM vfs_files WHERE account_id = $1 ORDER BY path LIMIT 3`, sc.AccountID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		stored = append(stored, p)
	}
	if rows.Close(); len(stored) != 3 {
		t.Fatalf("stored files %v, want 3 at least", stored)
	}
	var wg sync.WaitGroup
	for _, p := range stored {
		wg.Go(func() {
			if _, err := e.fs.Delete(c, &files.DeleteRequest{Scope: sc, Path: p}); err != nil {
				t.Errorf("delete %s: %v", p, err)
			}
		})
	}
	wg.Wait()
	okNew := 0
	var mu sync.Mutex
	for i := range 10 {
		wg.Go(func() {
			_, err := e.fs.Write(c, &files.WriteRequest{Scope: sc, Path: fmt.Sprintf("/r/%02d", i), Content: strings.Repeat("z", size)})
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				okNew++
			}
		})
	}
	wg.Wait()
	if okNew != 3 {
		t.Errorf("%d writes after freeing 3 files' room, want 3", okNew)
	}
	var used, storedBytes int64
	if err := e.pool.QueryRow(context.Background(), `SELECT u.bytes, (SELECT coalesce(sum(size), 0) FROM vfs_files WHERE account_id = $1)
		FROM vfs_usage u WHERE u.account_id = $1`, sc.AccountID).Scan(&used, &storedBytes); err != nil {
		t.Fatal(err)
	}
	if used != storedBytes || used != quota {
		t.Errorf("usage row %d, stored %d, want both %d", used, storedBytes, quota)
	}
}

// One group of changes with every verdict, in a known order: each change
// sees those before it in the same pipeline (the tree, versions, and the
// quota, also after an edit between writes), a check's failure leaves the
// others alone, a change whose caller has gone is not made, and a change
// that fails in the database (in doubt) fails alone after the group is
// rolled back and its changes run again one by one.
func TestGroupCommitMixedGroup(t *testing.T) {
	e := start(t, func(c *conf.Config) { c.VFSMaxFileBytes, c.VFSQuotaBytes = 100, 200 })
	c := ctx(t)
	gone, cancel := context.WithCancel(c)
	cancel()
	sc := files.Scope{AccountID: e.account(t), SessionID: "s"}
	write := func(ctx context.Context, req files.WriteRequest) func() error {
		return func() error {
			req.Scope = sc
			_, err := e.svc.write(ctx, &req)
			return err
		}
	}
	edit := func(req files.EditRequest) func() error {
		return func() error {
			req.Scope = sc
			_, err := e.svc.edit(c, &req)
			return err
		}
	}
	failing := func() error {
		return e.svc.changeStmt(c, sc.AccountID, &stmt{sql: `SELECT 1/0`, scan: func(row pgx.Row, _ *change) error {
			var n int
			return row.Scan(&n)
		}})
	}
	type step struct {
		name string
		run  func() error
		// want is the error's code: "" for none, internal for any error
		// but a check's, canceled for the caller's context's error.
		want wire.Code
	}
	const canceled = wire.Code("canceled")
	steps := []step{
		{"create /a", write(c, files.WriteRequest{Path: "/a", Content: "one"}), ""},
		{"below the file just written", write(c, files.WriteRequest{Path: "/a/b", Content: "x"}), wire.NotDir},
		{"create-only again", write(c, files.WriteRequest{Path: "/a", Content: "two"}), wire.AlreadyExists},
		{"stale version", write(c, files.WriteRequest{Path: "/a", Content: "two", Overwrite: true, ExpectedVersion: 2}), wire.FailedPrecondition},
		{"overwrite at version 1", write(c, files.WriteRequest{Path: "/a", Content: "two", Overwrite: true, ExpectedVersion: 1}), ""},
		{"edit between writes", edit(files.EditRequest{Path: "/a", Old: "two", New: strings.Repeat("2", 90), ExpectedVersion: 2}), ""},
		{"too large", write(c, files.WriteRequest{Path: "/big", Content: strings.Repeat("x", 101)}), wire.ResourceExhausted},
		{"caller gone", write(gone, files.WriteRequest{Path: "/gone", Content: "x"}), canceled},
		{"up to the quota", write(c, files.WriteRequest{Path: "/d/c", Content: strings.Repeat("c", 100)}), ""},
		{"over the quota", write(c, files.WriteRequest{Path: "/d/e", Content: strings.Repeat("e", 15)}), wire.ResourceExhausted},
		{"shrinking within the quota", write(c, files.WriteRequest{Path: "/d/c", Content: "c", Overwrite: true}), ""},
		{"a directory", write(c, files.WriteRequest{Path: "/d", Content: "x"}), wire.IsDir},
	}
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"checks", steps},
		{"in doubt", append([]step{{"fails in the database", failing, wire.Internal}}, steps...)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			errs := runOneGroup(t, e.svc, sc.AccountID, len(tt.steps), func(i int) error { return tt.steps[i].run() })
			for i, s := range tt.steps {
				err := errs[i]
				switch s.want {
				case "":
					if err != nil {
						t.Errorf("%s: %v", s.name, err)
					}
				case canceled:
					if !errors.Is(err, context.Canceled) {
						t.Errorf("%s: %v, want context canceled", s.name, err)
					}
				case wire.Internal:
					if err == nil || expected(err) {
						t.Errorf("%s: %v, want a failure", s.name, err)
					}
				default:
					if !wire.IsCode(err, s.want) {
						t.Errorf("%s: %v, want %s", s.name, err, s.want)
					}
				}
			}
			var used, stored, n int64
			if err := e.pool.QueryRow(c, `SELECT u.bytes, (SELECT coalesce(sum(size), 0) FROM vfs_files WHERE account_id = $1),
				(SELECT count(*) FROM vfs_files WHERE account_id = $1) FROM vfs_usage u WHERE u.account_id = $1`,
				sc.AccountID).Scan(&used, &stored, &n); err != nil {
				t.Fatal(err)
			}
			if used != 91 || stored != 91 || n != 2 {
				t.Errorf("usage row %d, stored %d bytes in %d files; want 91 in 2 (/a, /d/c)", used, stored, n)
			}
			for _, p := range []string{"/a", "/d"} {
				if _, err := e.fs.Delete(c, &files.DeleteRequest{Scope: sc, Path: p, Recursive: true}); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// runOneGroup runs n changes of account as one group, in order: change i
// is run(i). It holds the account's queue with a change of its own until
// all n wait, and returns their results.
func runOneGroup(t *testing.T, s *Service, account string, n int, run func(i int) error) []error {
	t.Helper()
	started, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- s.change(context.Background(), account, func(context.Context, *change) error {
			close(started)
			<-release
			return nil
		})
	}()
	<-started
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = run(i) })
		for queued(s, account) < i+1 {
			runtime.Gosched()
		}
	}
	close(release)
	wg.Wait()
	if err := <-held; err != nil {
		t.Fatalf("holding the queue: %v", err)
	}
	return errs
}

// queued is how many changes of account wait for a group.
func queued(s *Service, account string) int {
	s.groups.mu.Lock()
	defer s.groups.mu.Unlock()
	return len(s.groups.pending[account])
}
