package vfssvc

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/vfs/userdata"
)

func TestParseHealthCSV(t *testing.T) {
	data := "indicator,value,unit,time,source\n" +
		"Glucose,5.4,mmol/L,2026-01-05T08:00:00Z,lab\n" +
		"# a comment\n" +
		"Glucose,abc,mmol/L,2026-01-05\n" +
		"\"O'Brien; index\",1,,2026-01-05 10:00:00\n" +
		"HbA1c,5.6,%\n" +
		"HbA1c,5.6,%,yesterday\n" +
		",1,x,2026-01-05\n" +
		"\"multi\nline\",2,u,2026-01-06\n" +
		"Weight,NaN,kg,2026-01-05\n"
	rows, errs := parseHealthCSV(data, 1)
	wantLines := []int64{4, 6, 7, 8, 9, 11} // 9: a newline is a control character in a name
	var got []int64
	for _, e := range errs {
		got = append(got, e.Line)
	}
	if !slices.Equal(got, wantLines) {
		t.Errorf("error lines = %v, want %v (%v)", got, wantLines, errs)
	}
	want := []healthRow{
		{2, userdata.HealthRow{Indicator: "Glucose", Value: 5.4, Unit: "mmol/L", Time: time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC), Source: "lab"}},
		{5, userdata.HealthRow{Indicator: "O'Brien; index", Value: 1, Time: time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)}},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows = %+v", rows)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, rows[i], want[i])
		}
	}
	// A later chunk never treats its first record as a header, and numbers
	// lines from its first line.
	_, errs = parseHealthCSV("indicator,value,unit,time\n", 41)
	if len(errs) != 1 || errs[0].Line != 41 {
		t.Errorf("later chunk errors = %v", errs)
	}
}

func TestParseHealthNDJSON(t *testing.T) {
	data := `{"indicator":"Glucose","value":5.4,"unit":"mmol/L","time":"2026-01-05"}
{"indicator":"Glucose","value":"6.1","unit":"mmol/L","time":"2026-01-06T08:00:00+08:00","source":"lab"}
{"indicator":"Glucose","value":1,"unit":"mmol/L","time":"2026-01-05","extra":1}
[1,2]
{"indicator":"Glucose","value":null,"unit":"mmol/L","time":"2026-01-05"}
`
	rows, errs := parseHealthNDJSON(data, 10)
	if len(rows) != 2 || rows[1].Value != 6.1 || !rows[1].Time.Equal(time.Date(2026, 1, 6, 0, 0, 0, 0, time.UTC)) || rows[1].line != 11 {
		t.Errorf("rows = %+v", rows)
	}
	var lines []int64
	for _, e := range errs {
		lines = append(lines, e.Line)
	}
	if !slices.Equal(lines, []int64{12, 13, 14}) {
		t.Errorf("errors = %v", errs)
	}
}

func TestParseGenetic(t *testing.T) {
	data := "# 23andMe\n# rsid\tchromosome\tposition\tgenotype\n" +
		"rs1\t1\t100\tAG\n" +
		"i700\tMT\t5\t--\n" +
		"rs2\tchr23\t7\tA\tG\n" + // AncestryDNA: 23 is X, alleles apart
		"rs3\t26\t9\t0\t0\n" + // AncestryDNA no-call
		"rs4\t1\tx\tAA\n" +
		"rs5\t30\t1\tAA\n" +
		"rs6\t1\t1\tZZ\n" +
		"rs7\t1\t1\n" +
		"rs'8;\t2\t3\tcc\r\n" +
		"rsid\tchromosome\tposition\tallele1\tallele2\n"
	rows, errs := parseGenetic(data, 1)
	want := []geneticRow{
		{3, userdata.Variant{RSID: "rs1", Chromosome: "1", Position: 100, Genotype: "AG"}},
		{4, userdata.Variant{RSID: "i700", Chromosome: "MT", Position: 5, Genotype: "--"}},
		{5, userdata.Variant{RSID: "rs2", Chromosome: "X", Position: 7, Genotype: "AG"}},
		{6, userdata.Variant{RSID: "rs3", Chromosome: "MT", Position: 9, Genotype: "--"}},
		{11, userdata.Variant{RSID: "rs'8;", Chromosome: "2", Position: 3, Genotype: "CC"}},
	}
	if !slices.Equal(rows, want) {
		t.Errorf("rows = %+v", rows)
	}
	var lines []int64
	for _, e := range errs {
		lines = append(lines, e.Line)
	}
	if !slices.Equal(lines, []int64{7, 8, 9, 10}) {
		t.Errorf("errors = %v", errs)
	}
}

// TestParseNotUTF8: a line that is not UTF-8 (a Latin-1 export) is a line
// error that says so, in every format, and the other lines still parse.
func TestParseNotUTF8(t *testing.T) {
	csv := func(d string, l int64) (int, []userdata.LineError) {
		rows, errs := parseHealthCSV(d, l)
		return len(rows), errs
	}
	ndjson := func(d string, l int64) (int, []userdata.LineError) {
		rows, errs := parseHealthNDJSON(d, l)
		return len(rows), errs
	}
	genetic := func(d string, l int64) (int, []userdata.LineError) {
		rows, errs := parseGenetic(d, l)
		return len(rows), errs
	}
	tests := []struct {
		name  string
		data  string
		parse func(string, int64) (int, []userdata.LineError)
		rows  int
		line  int64
	}{
		{"csv", "indicator,value,unit,time\nCaf\xe9,1,u,2026-01-05\nok,1,u,2026-01-05\n", csv, 1, 2},
		{"csv header", "indic\xe9tor,value,unit,time\nok,1,u,2026-01-05\n", csv, 1, 1},
		{"csv quoted field", "ok,1,u,2026-01-05\n\"a\nb\xff\",1,u,2026-01-05\n", csv, 1, 2},
		{"ndjson", "{\"indicator\":\"\xe9\",\"value\":1,\"unit\":\"\",\"time\":\"2026-01-01\"}\n{\"indicator\":\"y\",\"value\":1,\"unit\":\"\",\"time\":\"2026-01-01\"}\n", ndjson, 1, 1},
		{"genetic", "rs1\t1\t100\tAG\nrs\xe92\t1\t100\tAG\nrs3\t1\t100\tAG\n", genetic, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, errs := tt.parse(tt.data, 1)
			if n != tt.rows || len(errs) != 1 || errs[0].Line != tt.line || !strings.Contains(errs[0].Message, "not valid UTF-8") {
				t.Fatalf("rows %d, errors %+v; want %d rows and an error on line %d", n, errs, tt.rows, tt.line)
			}
		})
	}
}

// A malformed CSV record is a line error, never a panic (FieldPos was once
// read before the error check, which panicked the handler into a 500).
func TestParseHealthCSVMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		first      int64
		lines      []int64
		valid      int
	}{
		{"bare quote alone", `a"b`, 1, []int64{1}, 0},
		{"bare quote between rows", "Glucose,5,mmol/L,2026-01-05\na\"b\nGlucose,6,mmol/L,2026-01-06\n", 1, []int64{2}, 2},
		{"quote in a later chunk", "x,\"y\"z,u,2026-01-05\n", 41, []int64{41}, 0},
		{"unterminated quote", "Glucose,5,mmol/L,2026-01-05\n\"open,1,u,2026-01-05\n", 1, []int64{2}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, errs := parseHealthCSV(tc.data, tc.first)
			var lines []int64
			for _, e := range errs {
				lines = append(lines, e.Line)
			}
			if !slices.Equal(lines, tc.lines) || len(rows) != tc.valid {
				t.Errorf("error lines %v (%v), %d rows; want %v, %d", lines, errs, len(rows), tc.lines, tc.valid)
			}
		})
	}
}
