package vfssvc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/userdata"
	"github.com/mirobody/mirobody-go/services/wire"
)

// TestImportStepsSentAgain: every step of the import protocol sent a
// second time (its first answer lost) gets the first answer and changes
// nothing; a different chunk under a used sequence number, or a used id
// for a new import, is refused.
func TestImportStepsSentAgain(t *testing.T) {
	e := start(t, nil)
	acct, other := e.account(t), e.account(t)
	id := uuid.NewString()
	begin := &userdata.ImportBeginRequest{ImportID: id, AccountID: acct, Kind: userdata.KindHealth, Format: userdata.FormatCSV}
	chunk0 := &userdata.ImportChunkRequest{AccountID: acct, ImportID: id, Seq: 0, FirstLine: 1,
		Data: []byte("indicator,value,unit,time\nGlucose,5.1,mmol/L,2026-01-01\nGlucose,x,mmol/L,2026-01-02\n")}
	chunk1 := &userdata.ImportChunkRequest{AccountID: acct, ImportID: id, Seq: 1, FirstLine: 4,
		Data: []byte("Pulse,60,bpm,2026-01-01\n")}
	commit := &userdata.ImportCommitRequest{AccountID: acct, ImportID: id, Partial: true}

	for range 2 {
		got, err := userdata.ImportBegin.Call(ctx(t), e.client, begin)
		wantCode(t, err, "")
		if got.ImportID != id {
			t.Fatalf("begin answered import %s, want %s", got.ImportID, id)
		}
	}
	_, err := userdata.ImportBegin.Call(ctx(t), e.client,
		&userdata.ImportBeginRequest{ImportID: id, AccountID: other, Kind: userdata.KindHealth, Format: userdata.FormatCSV})
	wantCode(t, err, wire.AlreadyExists)

	first, err := userdata.ImportChunk.Call(ctx(t), e.client, chunk0)
	wantCode(t, err, "")
	again, err := userdata.ImportChunk.Call(ctx(t), e.client, chunk0)
	wantCode(t, err, "")
	if fmt.Sprint(first) != fmt.Sprint(again) || first.Rows != 1 || len(first.Errors) != 1 {
		t.Errorf("chunk 0 answered %+v, then %+v", first, again)
	}
	_, err = userdata.ImportBegin.Call(ctx(t), e.client, begin)
	wantCode(t, err, wire.AlreadyExists) // the import has chunks: not a resent begin
	altered := *chunk0
	altered.Data = []byte("Pulse,61,bpm,2026-01-01\n")
	_, err = userdata.ImportChunk.Call(ctx(t), e.client, &altered)
	wantCode(t, err, wire.FailedPrecondition)
	for range 2 {
		_, err = userdata.ImportChunk.Call(ctx(t), e.client, chunk1)
		wantCode(t, err, "")
	}
	_, err = userdata.ImportChunk.Call(ctx(t), e.client, chunk0)
	wantCode(t, err, wire.FailedPrecondition) // only the last chunk is kept

	res, err := userdata.ImportCommit.Call(ctx(t), e.client, commit)
	wantCode(t, err, "")
	if !res.Committed || res.Valid != 2 || res.Written != 2 || res.Inserted != 2 || res.ErrorCount != 1 {
		t.Fatalf("commit = %+v", res)
	}
	res2, err := userdata.ImportCommit.Call(ctx(t), e.client, commit)
	wantCode(t, err, "")
	if fmt.Sprint(res2) != fmt.Sprint(res) {
		t.Errorf("commit sent again = %+v, first %+v", res2, res)
	}
	_, err = userdata.ImportCommit.Call(ctx(t), e.client, &userdata.ImportCommitRequest{AccountID: other, ImportID: id})
	wantCode(t, err, wire.NotFound)
	_, err = userdata.ImportBegin.Call(ctx(t), e.client, begin)
	wantCode(t, err, wire.AlreadyExists)
	_, err = userdata.ImportAbort.Call(ctx(t), e.client, &userdata.ImportAbortRequest{AccountID: acct, ImportID: id})
	wantCode(t, err, wire.NotFound)
	if n := e.healthRows(t, acct); n != 2 {
		t.Errorf("%d health rows stored, want 2", n)
	}
}

// TestImportSurvivesReplicaDeath: of two vfs-svc replicas, the one
// handling a chunk loses NATS (as when killed) after the chunk reached
// the database; the caller hears no more beats, sends the chunk again,
// the other replica answers it as the first would have, and the import
// completes with every row stored once.
func TestImportSurvivesReplicaDeath(t *testing.T) {
	e := start(t, nil)
	acct := e.account(t)
	// A short window keeps the test quick; a loaded machine that misses
	// it costs only another try, since every import step is idempotent.
	c := wire.NewClient(wire.ClientOptions{Conn: servicetest.Conn(t, e.url), Liveness: 500 * time.Millisecond})
	data := userdata.NewData(c)

	const rows = 30000 // over two chunks
	var file bytes.Buffer
	file.WriteString("indicator,value,unit,time\n")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range rows {
		fmt.Fprintf(&file, "Glucose,%d,mmol/L,%s\n", i, t0.Add(time.Duration(i)*time.Minute).Format(time.RFC3339))
	}
	if file.Len() < 2*userdata.ChunkBytes {
		t.Fatalf("the file of %d bytes does not span chunks", file.Len())
	}

	// Hold the import's row so that the first chunk waits inside replica A.
	pr, pw := io.Pipe()
	t.Cleanup(func() { _ = pw.Close() })
	done := make(chan error, 1)
	var res *userdata.ImportResult
	go func() {
		var err error
		res, err = data.Import(ctx(t), &userdata.ImportRequest{AccountID: acct, Kind: userdata.KindHealth, Format: userdata.FormatCSV}, pr)
		done <- err
	}()
	servicetest.Eventually(t, 10*time.Second, func() bool {
		var n int
		return e.pool.QueryRow(ctx(t), `SELECT count(*) FROM data_imports WHERE account_id = $1`, acct).Scan(&n) == nil && n == 1
	}, "the import began")
	hold, err := e.pool.Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hold.Rollback(context.Background()) })
	if _, err := hold.Exec(ctx(t), `SELECT 1 FROM data_imports WHERE account_id = $1 FOR UPDATE`, acct); err != nil {
		t.Fatal(err)
	}
	head := file.Bytes()[:userdata.ChunkBytes+1<<10]
	head = head[:bytes.LastIndexByte(head, '\n')+1]
	go func() { _, _ = pw.Write(head) }()
	servicetest.Eventually(t, 10*time.Second, func() bool {
		var n int
		return e.pool.QueryRow(ctx(t), `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%FROM data_imports%'`).Scan(&n) == nil && n == 1
	}, "chunk 0 waits in replica A")

	b := New(Options{Config: e.cfg, Log: servicetest.Logger(t)})
	if err := b.Start(context.Background()); err != nil {
		t.Fatalf("starting replica B: %v", err)
	}
	t.Cleanup(func() { _ = b.Stop(context.Background()) })
	e.svc.node.Conn.Close() // replica A is cut off; its handler still commits chunk 0
	if err := hold.Rollback(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := pw.Write(file.Bytes()[len(head):]); err != nil {
		t.Fatal(err)
	}
	_ = pw.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("import with a replica lost: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the import did not finish")
	}
	if !res.Committed || res.Valid != rows || res.Written != rows || res.Inserted != rows || res.ErrorCount != 0 {
		t.Errorf("import = %+v", res)
	}
	if n := e.healthRows(t, acct); n != rows {
		t.Errorf("%d health rows stored, want %d", n, rows)
	}
}

// healthRows counts the account's stored health rows.
func (e *env) healthRows(t testing.TB, account string) int {
	t.Helper()
	var n int
	if err := e.pool.QueryRow(ctx(t), `SELECT count(*) FROM health_series WHERE account_id = $1`, account).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
