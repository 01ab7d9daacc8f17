package vfssvc

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

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
		// write is writer i's request.
		write func(i int) *files.WriteRequest
		// wantOK is how many writes succeed; the others fail with wantErr.
		wantOK  int
		wantErr wire.Code
	}{
		{"quota", func(i int) *files.WriteRequest {
			return &files.WriteRequest{Scope: sc, Path: fmt.Sprintf("/q/%02d", i), Content: strings.Repeat("x", size)}
		}, quota / size, wire.ResourceExhausted},
		{"create-only race", func(int) *files.WriteRequest {
			return &files.WriteRequest{Scope: sc, Path: "/q/00", Content: "y", Overwrite: false}
		}, 0, wire.AlreadyExists},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make([]error, writers)
			for i := range writers {
				wg.Go(func() { _, errs[i] = e.fs.Write(c, tt.write(i)) })
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
