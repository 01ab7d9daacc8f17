package vfssvc

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/userdata"
	"github.com/mirobody/mirobody-go/services/wire"
	"github.com/mirobody/mirobody-go/services/wire/wiretest"
)

// update is wiretest's -update flag, which the contract checks share.
var update = wiretest.Update

func readExample(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// countEvents counts events.data.changed.<account>.
func countEvents(t testing.TB, e *env, account string) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	sub, err := e.client.Conn().Subscribe(userdata.DataChanged.For(account).Subject, func(*nats.Msg) { n.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := e.client.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	return &n
}

func (e *env) importText(t testing.TB, account, kind, format string, partial bool, body string) *userdata.ImportResult {
	t.Helper()
	res, err := e.data.Import(ctx(t), &userdata.ImportRequest{AccountID: account, Kind: kind, Format: format, Partial: partial}, strings.NewReader(body))
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	return res
}

func (e *env) kindsOf(t testing.TB, account string) []string {
	t.Helper()
	k, err := e.data.Kinds(ctx(t), &userdata.DataKindsRequest{AccountID: account})
	if err != nil {
		t.Fatal(err)
	}
	return k.Kinds
}

func TestHealthImport(t *testing.T) {
	e := start(t, nil)
	acct := e.account(t)
	events := countEvents(t, e, acct)
	if k := e.kindsOf(t, acct); len(k) != 0 {
		t.Fatalf("fresh account kinds = %v", k)
	}
	bad := "indicator,value,unit,time\nGlucose,5.1,mmol/L,2026-01-01\nGlucose,high,mmol/L,2026-01-02\nPulse,60,bpm\nPulse,61,bpm,2026-01-02\n"
	res := e.importText(t, acct, userdata.KindHealth, userdata.FormatCSV, false, bad)
	if res.Committed || res.ErrorCount != 2 || res.Written != 0 || res.Valid != 2 {
		t.Errorf("atomic import = %+v", res)
	}
	if len(res.Errors) != 2 || res.Errors[0].Line != 3 || res.Errors[1].Line != 4 || !strings.Contains(res.Errors[0].Message, "high") {
		t.Errorf("errors = %+v", res.Errors)
	}
	if k := e.kindsOf(t, acct); len(k) != 0 {
		t.Errorf("a failed atomic import wrote data: kinds %v", k)
	}
	res = e.importText(t, acct, userdata.KindHealth, userdata.FormatCSV, true, bad)
	if !res.Committed || res.Written != 2 || res.Inserted != 2 || res.ErrorCount != 2 {
		t.Errorf("partial import = %+v", res)
	}
	if k := e.kindsOf(t, acct); !slices.Equal(k, []string{userdata.KindHealth}) {
		t.Errorf("kinds = %v", k)
	}

	example := readExample(t, "health.csv")
	for i, wantInserted := range []int64{30, 0} {
		res = e.importText(t, acct, userdata.KindHealth, userdata.FormatCSV, false, []string{"", "\ufeff"}[i]+example) // the second time with a BOM
		if !res.Committed || res.Written != 30 || res.Inserted != wantInserted || res.ErrorCount != 0 {
			t.Errorf("example import %d = %+v", i, res)
		}
	}
	js := `[{"indicator":"Glucose","value":5.1,"unit":"mmol/L","time":"2026-01-01"},
		{"indicator":"Ketones","value":"0.4","unit":"mmol/L","time":"2026-01-03T09:00:00Z","source":"meter"}]`
	res = e.importText(t, acct, userdata.KindHealth, userdata.FormatJSON, false, js)
	if !res.Committed || res.Written != 2 || res.Inserted != 1 {
		t.Errorf("JSON import = %+v", res)
	}
	res = e.importText(t, acct, userdata.KindHealth, userdata.FormatJSON, false, `[{"indicator":"x","value":1,"unit":"","time":"2026-01-01"}, {"value":2}]`)
	if res.Committed || res.ErrorCount != 1 || res.Errors[0].Line != 2 {
		t.Errorf("bad JSON import = %+v", res)
	}
	_, err := e.data.Import(ctx(t), &userdata.ImportRequest{AccountID: acct, Kind: userdata.KindHealth, Format: userdata.FormatJSON}, strings.NewReader(`{"not":"an array"}`))
	wantCode(t, err, wire.InvalidArgument)

	var rows int64
	if err := e.pool.QueryRow(ctx(t), `SELECT count(*) FROM health_series WHERE account_id = $1`, acct).Scan(&rows); err != nil || rows != 33 {
		t.Errorf("stored rows = %d, %v", rows, err)
	}
	// Every committed import announced itself (the failed ones did not).
	servicetest.Eventually(t, 5*time.Second, func() bool { return events.Load() == 4 }, "4 data change events")

	del, err := e.data.DeleteHealth(ctx(t), &userdata.HealthDeleteRequest{AccountID: acct, Indicators: []string{"GLUCOSE"}})
	wantCode(t, err, "")
	if del.Deleted != 4 {
		t.Errorf("deleted %d glucose rows", del.Deleted)
	}
	del, err = e.data.DeleteHealth(ctx(t), &userdata.HealthDeleteRequest{AccountID: acct})
	wantCode(t, err, "")
	if del.Deleted != 29 || len(e.kindsOf(t, acct)) != 0 {
		t.Errorf("deleted %d, kinds %v", del.Deleted, e.kindsOf(t, acct))
	}
	servicetest.Eventually(t, 5*time.Second, func() bool { return events.Load() == 6 }, "delete events")
}

func TestGeneticImport(t *testing.T) {
	e := start(t, nil)
	acct := e.account(t)
	for i, wantInserted := range []int64{31, 0} {
		res := e.importText(t, acct, userdata.KindGenetic, userdata.FormatRaw, false, readExample(t, "genome_23andme.txt"))
		if !res.Committed || res.Written != 31 || res.Inserted != wantInserted || res.ErrorCount != 0 {
			t.Errorf("example import %d = %+v", i, res)
		}
	}
	var g string
	if err := e.pool.QueryRow(ctx(t), `SELECT genotype FROM genetic_variants WHERE account_id = $1 AND rsid = 'i5000100'`, acct).Scan(&g); err != nil || g != "--" {
		t.Errorf("no-call genotype = %q, %v", g, err)
	}

	// A file of several chunks, with one bad line far into it: the line
	// number is exact across chunks, and the atomic import writes nothing.
	other := e.account(t)
	var b strings.Builder
	b.WriteString("# generated\n")
	const n = 30000
	for i := range n {
		if i == 25000 {
			b.WriteString("rsBAD\t1\tnot-a-number\tAA\n")
			continue
		}
		fmt.Fprintf(&b, "rs%d\t%d\t%d\t%s\n", 100000+i, i%22+1, 1000+i*10, []string{"AA", "AG", "GG", "--"}[i%4])
	}
	if b.Len() < 2*userdata.ChunkBytes {
		t.Fatalf("fixture of %d bytes does not span chunks", b.Len())
	}
	res := e.importText(t, other, userdata.KindGenetic, userdata.FormatRaw, false, b.String())
	if res.Committed || res.ErrorCount != 1 || res.Errors[0].Line != 25002 || res.Valid != n-1 {
		t.Errorf("atomic multi-chunk import = %+v", res)
	}
	if k := e.kindsOf(t, other); len(k) != 0 {
		t.Errorf("kinds after failed import = %v", k)
	}
	res = e.importText(t, other, userdata.KindGenetic, userdata.FormatRaw, true, b.String())
	if !res.Committed || res.Written != n-1 {
		t.Errorf("partial multi-chunk import = %+v", res)
	}
	var staged int64
	if err := e.pool.QueryRow(ctx(t), `SELECT (SELECT count(*) FROM import_genetic) + (SELECT count(*) FROM data_imports)`).Scan(&staged); err != nil || staged != 0 {
		t.Errorf("staging left %d rows, %v", staged, err)
	}

	// The protocol refuses chunks out of order and other accounts' imports.
	begin, err := userdata.ImportBegin.Call(ctx(t), e.client,
		&userdata.ImportBeginRequest{AccountID: acct, Kind: userdata.KindGenetic, Format: userdata.FormatRaw})
	wantCode(t, err, "")
	_, err = userdata.ImportChunk.Call(ctx(t), e.client,
		&userdata.ImportChunkRequest{AccountID: acct, ImportID: begin.ImportID, Seq: 1, FirstLine: 1, Data: []byte("rs1\t1\t1\tAA\n")})
	wantCode(t, err, wire.FailedPrecondition)
	_, err = userdata.ImportCommit.Call(ctx(t), e.client,
		&userdata.ImportCommitRequest{AccountID: other, ImportID: begin.ImportID})
	wantCode(t, err, wire.NotFound)
	_, err = userdata.ImportBegin.Call(ctx(t), e.client,
		&userdata.ImportBeginRequest{AccountID: acct, Kind: userdata.KindGenetic, Format: userdata.FormatCSV})
	wantCode(t, err, wire.InvalidArgument)

	del, err := e.data.DeleteGenetic(ctx(t), &userdata.GeneticDeleteRequest{AccountID: acct, RSIDs: []string{"rs7412", "rs429358"}})
	wantCode(t, err, "")
	if del.Deleted != 2 {
		t.Errorf("deleted %d", del.Deleted)
	}
}

// checkGolden compares v, as indented JSON, with testdata/<name>.json.
func checkGolden(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	file := filepath.Join("testdata", name+".json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from %s:\n%s", name, file, got)
	}
}

// hostile names check that values only ever travel as parameters.
const (
	hostileIndicator = `Glucose'); DROP TABLE health_series; --"`
	hostileRSID      = `rs1';DROP/**/TABLE/**/genetic_variants;--`
)

func TestDataQueriesGolden(t *testing.T) {
	e := start(t, nil)
	acct := e.account(t)
	e.importText(t, acct, userdata.KindHealth, userdata.FormatCSV, false, readExample(t, "health.csv"))
	e.importText(t, acct, userdata.KindHealth, userdata.FormatCSV, false,
		`"`+strings.ReplaceAll(hostileIndicator, `"`, `""`)+`",1.5,x;y,2026-03-01T00:00:00Z,src'; --`+"\n")
	if res := e.importText(t, acct, userdata.KindGenetic, userdata.FormatRaw, false, readExample(t, "genome_23andme.txt")+hostileRSID+"\t19\t45411950\tAG\n"); res.Written != 32 {
		t.Fatalf("fixture import = %+v", res)
	}
	// Another account's look-alike rows must never show.
	noise := e.account(t)
	e.importText(t, noise, userdata.KindHealth, userdata.FormatCSV, false, "Glucose,99,mmol/L,2026-03-01\n")
	e.importText(t, noise, userdata.KindGenetic, userdata.FormatRaw, false, "rs429358\t19\t45411942\tCC\n")

	start, end := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 31, 0, 0, 0, 0, time.UTC)
	health := []struct {
		name string
		req  userdata.HealthQueryRequest
	}{
		{"health_catalog", userdata.HealthQueryRequest{}},
		{"health_rows", userdata.HealthQueryRequest{Mode: userdata.HealthRows, Indicators: []string{"glucose", "HEART RATE"}, Limit: 3}},
		{"health_latest", userdata.HealthQueryRequest{Mode: userdata.HealthLatest, Indicators: []string{"Body weight", "Glucose", "nonexistent"}}},
		{"health_stats_none", userdata.HealthQueryRequest{Mode: userdata.HealthStats, Indicators: []string{"Heart rate", "Glucose"}}},
		{"health_stats_week", userdata.HealthQueryRequest{Mode: userdata.HealthStats, Bucket: userdata.BucketWeek, Indicators: []string{"Heart rate", "Body weight"}, Start: &start, End: &end}},
		{"health_hostile", userdata.HealthQueryRequest{Mode: userdata.HealthRows, Indicators: []string{hostileIndicator}}},
	}
	for _, h := range health {
		req := h.req
		req.AccountID = acct
		resp, err := e.data.QueryHealth(ctx(t), &req)
		if err != nil {
			t.Fatalf("%s: %v", h.name, err)
		}
		checkGolden(t, h.name, resp)
	}
	pos := int64(45411941)
	genetic := []struct {
		name string
		req  userdata.GeneticQueryRequest
	}{
		{"genetic_apoe_nearby", userdata.GeneticQueryRequest{RSIDs: []string{"RS429358", "rs7412", "rs999"}, IncludeNearby: true, NearbyRange: 20000}},
		{"genetic_locus", userdata.GeneticQueryRequest{Chromosome: "chr19", Position: &pos}},
		{"genetic_chromosome_page", userdata.GeneticQueryRequest{Chromosome: "1", Limit: 3, Offset: 2, IncludeNearby: true, NearbyRange: 30000, NearbyLimit: 2}},
		{"genetic_genotype", userdata.GeneticQueryRequest{Chromosome: "1", Genotype: "GA"}},
		{"genetic_hostile", userdata.GeneticQueryRequest{RSIDs: []string{hostileRSID, "rs1'"}}},
	}
	for _, g := range genetic {
		req := g.req
		req.AccountID = acct
		resp, err := e.data.QueryGenetic(ctx(t), &req)
		if err != nil {
			t.Fatalf("%s: %v", g.name, err)
		}
		checkGolden(t, g.name, resp)
	}
	_, err := e.data.QueryGenetic(ctx(t), &userdata.GeneticQueryRequest{AccountID: acct})
	wantCode(t, err, wire.InvalidArgument)
	_, err = e.data.QueryHealth(ctx(t), &userdata.HealthQueryRequest{AccountID: acct, Mode: userdata.HealthStats, Bucket: "year'; --"})
	wantCode(t, err, wire.InvalidArgument)
	var tables int
	if err := e.pool.QueryRow(ctx(t), `SELECT count(*) FROM pg_tables WHERE tablename IN ('health_series', 'genetic_variants')`).Scan(&tables); err != nil || tables != 2 {
		t.Errorf("tables = %d, %v", tables, err)
	}
}
