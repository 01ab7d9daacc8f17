package vfssvc

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/vfs/userdata"
	"github.com/mirobody/mirobody-go/vfs-svc/migrations"
)

// words is the vocabulary of the benchmark files, so that trigrams repeat
// the way they do in real text.
var words = strings.Fields(`the of and to in is that for it as with was on be by this are from or have an
	they which one you were her all she there would their we him been has when who will more no if out so said
	what up its about into than them can only other new some could time these two may then do first any my now
	such like our over man me even most made after also did many before must through back years where much your
	way well down should because each just those people how too little state good very make world still own see
	function return package import struct interface error context string value index table query result`)

// seedFiles stores n files of about size bytes for one account by COPY
// (setting up through NATS would only slow the benchmark's setup). Every
// hundredth file holds the rare token "needle42".
func seedFiles(b *testing.B, e *env, account string, n, size int) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	rows := make([][]any, n)
	for i := range rows {
		var sb strings.Builder
		for sb.Len() < size {
			sb.WriteString(words[rng.IntN(len(words))])
			if rng.IntN(12) == 0 {
				sb.WriteByte('\n')
			} else {
				sb.WriteByte(' ')
			}
		}
		content := sb.String()
		if i%100 == 0 {
			content = "needle42 is here\n" + content
		}
		rows[i] = []any{account, "s", fmt.Sprintf("/work/dir%02d/file%05d.txt", i%50, i), content, int64(len(content)), int64(1)}
	}
	_, err := e.pool.CopyFrom(context.Background(), pgx.Identifier{"vfs_files"},
		[]string{"account_id", "session_id", "path", "content", "size", "version"}, pgx.CopyFromRows(rows))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.pool.Exec(context.Background(), "ANALYZE vfs_files"); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkGrep greps 10,000 files of 4 KiB in one account (target: at
// most 100 ms per search).
func BenchmarkGrep(b *testing.B) {
	e := start(b, nil)
	sc := files.Scope{AccountID: e.account(b), SessionID: "s"}
	seedFiles(b, e, sc.AccountID, 10000, 4096)
	other := e.account(b) // a second tenant with the same data
	seedFiles(b, e, other, 10000, 4096)
	cases := []struct {
		name string
		req  files.GrepRequest
		want int
	}{
		{"literal_files", files.GrepRequest{Pattern: "needle42", Literal: true}, 100},
		{"regex_files", files.GrepRequest{Pattern: `needle\d+ is`}, 100},
		{"literal_content", files.GrepRequest{Pattern: "needle42", Literal: true, Mode: files.GrepContent}, 100},
		{"literal_count_dir", files.GrepRequest{Pattern: "needle42", Literal: true, Mode: files.GrepCount, Path: "/work/dir00"}, 100},
		{"common_word_files_limit_500", files.GrepRequest{Pattern: "interface", Literal: true}, 500},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			req := c.req
			req.Scope = sc
			for b.Loop() {
				resp, err := e.fs.Grep(context.Background(), &req)
				if err != nil {
					b.Fatal(err)
				}
				if got := len(resp.Files) + len(resp.Matches); got != c.want {
					b.Fatalf("got %d results, want %d", got, c.want)
				}
			}
		})
	}
}

// BenchmarkRead reads a 100-line file over NATS (target: at most 1 ms).
func BenchmarkRead(b *testing.B) {
	e := start(b, nil)
	sc := files.Scope{AccountID: e.account(b), SessionID: "s"}
	var sb strings.Builder
	for i := range 100 {
		fmt.Fprintf(&sb, "line %d: the quick brown fox jumps over the lazy dog\n", i)
	}
	mustWrite(b, e, sc, "/notes/a.md", sb.String())
	req := &files.ReadRequest{Scope: sc, Path: "/notes/a.md"}
	for b.Loop() {
		r, err := e.fs.Read(context.Background(), req)
		if err != nil || r.TotalLines != 100 {
			b.Fatal(r, err)
		}
	}
}

// BenchmarkGeneticImport imports a 600,000-line raw data file through the
// chunked import protocol into a fresh account per iteration.
func BenchmarkGeneticImport(b *testing.B) {
	e := start(b, nil)
	const lines = 600000
	var sb strings.Builder
	sb.WriteString("# rsid\tchromosome\tposition\tgenotype\n")
	gts := []string{"AA", "AG", "GG", "CT", "--"}
	for i := range lines {
		fmt.Fprintf(&sb, "rs%d\t%d\t%d\t%s\n", 1000000+i, i%22+1, 10000+i*37, gts[i%len(gts)])
	}
	data := sb.String()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		acct := e.account(b)
		res, err := e.data.Import(context.Background(), &userdata.ImportRequest{AccountID: acct, Kind: userdata.KindGenetic, Format: userdata.FormatRaw},
			strings.NewReader(data))
		if err != nil || res.Written != lines {
			b.Fatal(res, err)
		}
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkWriteOneAccount writes small files of one account over NATS
// from 32 concurrent writers, each to its own paths (issue 20: at least
// 1,000 writes/s without giving up durability). fsync=off runs on the
// shared test server (withpg's runs with fsync off; TEST_DATABASE_URL may
// name another), which measures the serialisation of the account's
// changes; fsync=on runs on a private server with fsync and
// synchronous_commit on, as `mirobody dev` and production do, so each
// group's commit waits for the disk as well.
func BenchmarkWriteOneAccount(b *testing.B) {
	for _, c := range []struct {
		name    string
		db      func(testing.TB, servicetest.Migrations) *servicetest.DB
		durable bool
	}{
		{"fsync=off", servicetest.Postgres, false},
		{"fsync=on", servicetest.DurablePostgres, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			db := c.db(b, migrations.FS)
			var fsync, syncCommit string
			if err := db.Pool.QueryRow(context.Background(), `SELECT current_setting('fsync'), current_setting('synchronous_commit')`).
				Scan(&fsync, &syncCommit); err != nil {
				b.Fatal(err)
			}
			if c.durable && (fsync != "on" || syncCommit != "on") {
				b.Fatalf("the durable server runs with fsync=%s synchronous_commit=%s", fsync, syncCommit)
			}
			b.Logf("fsync=%s synchronous_commit=%s", fsync, syncCommit)
			benchWriteOneAccount(b, startOn(b, db, nil))
		})
	}
}

func benchWriteOneAccount(b *testing.B, e *env) {
	sc := files.Scope{AccountID: e.account(b), SessionID: "s"}
	const writers = 32
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	b.ResetTimer()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				p := fmt.Sprintf("/work/w%02d/f%03d.txt", w, i%200)
				if _, err := e.fs.Write(context.Background(), &files.WriteRequest{Scope: sc, Path: p, Content: "hello", Overwrite: true}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
}
