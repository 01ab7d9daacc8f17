package vfssvc

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mirobody/mirobody-go/services/vfs/userdata"
)

// Field limits of imported rows.
const (
	maxNameRunes  = 200
	maxUnitRunes  = 50
	maxRSIDBytes  = 64
	maxGenotypeCh = 4
)

// healthRow is one valid health line of an import.
type healthRow struct {
	line int64
	userdata.HealthRow
}

// geneticRow is one valid genetic line of an import.
type geneticRow struct {
	line int64
	userdata.Variant
}

// timeLayouts are the accepted time formats; times without a zone are UTC.
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"}

func parseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("time %q is not an ISO date or date-time", s)
}

// checkText validates a free-text field: valid UTF-8, no control
// characters, at most max runes (and, when required, not empty).
func checkText(field, s string, max int, required bool) error {
	switch {
	case required && s == "":
		return fmt.Errorf("%s is empty", field)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s is not valid UTF-8", field)
	case utf8.RuneCountInString(s) > max:
		return fmt.Errorf("%s is longer than %d characters", field, max)
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return fmt.Errorf("%s contains a control character", field)
	}
	return nil
}

// errNotUTF8 is the line error of input that is not UTF-8 text (Latin-1
// or UTF-16 exports, binary files).
var errNotUTF8 = errors.New("the line is not valid UTF-8 text; save the file as UTF-8")

// newHealthRow validates one row's fields.
func newHealthRow(indicator, value, unit, when, source string) (userdata.HealthRow, error) {
	r := userdata.HealthRow{Indicator: strings.TrimSpace(indicator), Unit: strings.TrimSpace(unit), Source: strings.TrimSpace(source)}
	if err := errors.Join(checkText("indicator", r.Indicator, maxNameRunes, true),
		checkText("unit", r.Unit, maxUnitRunes, false), checkText("source", r.Source, maxNameRunes, false)); err != nil {
		return r, err
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return r, fmt.Errorf("value %q is not a finite number", value)
	}
	r.Value = v
	if r.Time, err = parseTime(when); err != nil {
		return r, err
	}
	return r, nil
}

// parseHealthCSV parses CSV lines `indicator,value,unit,time[,source]`; a
// header (a first record whose first field is "indicator") and `#`
// comments are skipped.
func parseHealthCSV(data string, firstLine int64) ([]healthRow, []userdata.LineError) {
	r := csv.NewReader(strings.NewReader(data))
	r.FieldsPerRecord = -1
	r.Comment = '#'
	var rows []healthRow
	var errs []userdata.LineError
	header := firstLine == 1 // only the file's first record may be a header
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// No record, so no FieldPos (it panics): the error has the line.
			var pe *csv.ParseError
			abs := firstLine
			if errors.As(err, &pe) {
				abs = firstLine + int64(pe.Line) - 1
				err = pe.Err
			}
			errs = append(errs, userdata.LineError{Line: abs, Message: err.Error()})
			continue
		}
		line, _ := r.FieldPos(0)
		abs := firstLine + int64(line) - 1
		if slices.ContainsFunc(rec, func(f string) bool { return !utf8.ValidString(f) }) {
			errs = append(errs, userdata.LineError{Line: abs, Message: errNotUTF8.Error()})
			header = false
			continue
		}
		if header {
			header = false
			if strings.EqualFold(strings.TrimSpace(rec[0]), "indicator") {
				continue
			}
		}
		if len(rec) != 4 && len(rec) != 5 {
			errs = append(errs, userdata.LineError{Line: abs, Message: fmt.Sprintf("want 4 or 5 fields (indicator,value,unit,time[,source]), got %d", len(rec))})
			continue
		}
		rec = append(rec, "")
		h, err := newHealthRow(rec[0], rec[1], rec[2], rec[3], rec[4])
		if err != nil {
			errs = append(errs, userdata.LineError{Line: abs, Message: err.Error()})
			continue
		}
		rows = append(rows, healthRow{line: abs, HealthRow: h})
	}
	return rows, errs
}

// jsonHealth is one element of a JSON health import; value may be a
// number or a numeric string.
type jsonHealth struct {
	Indicator string          `json:"indicator"`
	Value     json.RawMessage `json:"value"`
	Unit      string          `json:"unit"`
	Time      string          `json:"time"`
	Source    string          `json:"source"`
}

// parseHealthNDJSON parses one JSON object per line; the line number is
// the element's position in the original array.
func parseHealthNDJSON(data string, firstLine int64) ([]healthRow, []userdata.LineError) {
	var rows []healthRow
	var errs []userdata.LineError
	for i, line := range strings.Split(strings.TrimSuffix(data, "\n"), "\n") {
		abs := firstLine + int64(i)
		if strings.TrimSpace(line) == "" {
			continue
		}
		if !utf8.ValidString(line) { // encoding/json would read it as U+FFFD
			errs = append(errs, userdata.LineError{Line: abs, Message: errNotUTF8.Error()})
			continue
		}
		var j jsonHealth
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&j); err != nil {
			errs = append(errs, userdata.LineError{Line: abs, Message: fmt.Sprintf("element is not a health object: %v", err)})
			continue
		}
		value := string(bytes.Trim(j.Value, `"`))
		h, err := newHealthRow(j.Indicator, value, j.Unit, j.Time, j.Source)
		if err != nil {
			errs = append(errs, userdata.LineError{Line: abs, Message: err.Error()})
			continue
		}
		rows = append(rows, healthRow{line: abs, HealthRow: h})
	}
	return rows, errs
}

// chromosomes maps the spellings of raw data files to one name each.
// AncestryDNA numbers X, Y, the pseudo-autosomal region and MT 23 to 26.
var chromosomes = func() map[string]string {
	m := map[string]string{"X": "X", "Y": "Y", "XY": "XY", "MT": "MT", "M": "MT", "23": "X", "24": "Y", "25": "XY", "26": "MT"}
	for i := 1; i <= 22; i++ {
		m[strconv.Itoa(i)] = strconv.Itoa(i)
	}
	return m
}()

// parseGenetic parses 23andMe (rsid, chromosome, position, genotype) and
// AncestryDNA (rsid, chromosome, position, allele1, allele2) raw data:
// tab-separated, `#` comments, an optional header line starting "rsid".
// A no-call is stored as "--" (AncestryDNA writes it as alleles "0 0").
func parseGenetic(data string, firstLine int64) ([]geneticRow, []userdata.LineError) {
	var rows []geneticRow
	var errs []userdata.LineError
	for i, line := range strings.Split(strings.TrimSuffix(data, "\n"), "\n") {
		abs := firstLine + int64(i)
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !utf8.ValidString(line) {
			errs = append(errs, userdata.LineError{Line: abs, Message: errNotUTF8.Error()})
			continue
		}
		f := strings.Split(line, "\t")
		if strings.EqualFold(strings.TrimSpace(f[0]), "rsid") {
			continue
		}
		v, err := newVariant(f)
		if err != nil {
			errs = append(errs, userdata.LineError{Line: abs, Message: err.Error()})
			continue
		}
		rows = append(rows, geneticRow{line: abs, Variant: v})
	}
	return rows, errs
}

func newVariant(f []string) (userdata.Variant, error) {
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	var v userdata.Variant
	switch len(f) {
	case 4:
		v.Genotype = strings.ToUpper(f[3])
	case 5:
		v.Genotype = strings.ToUpper(f[3] + f[4])
		if v.Genotype == "00" {
			v.Genotype = "--"
		}
	default:
		return v, fmt.Errorf("want 4 tab-separated fields (rsid, chromosome, position, genotype) or 5 (with two alleles), got %d", len(f))
	}
	v.RSID = f[0]
	if v.RSID == "" || len(v.RSID) > maxRSIDBytes || strings.IndexFunc(v.RSID, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 || !utf8.ValidString(v.RSID) {
		return v, fmt.Errorf("rsid %q is invalid", f[0])
	}
	chrom, ok := chromosomes[strings.TrimPrefix(strings.ToUpper(f[1]), "CHR")]
	if !ok {
		return v, fmt.Errorf("chromosome %q is not 1-22, X, Y, XY or MT", f[1])
	}
	v.Chromosome = chrom
	pos, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || pos < 0 {
		return v, fmt.Errorf("position %q is not a non-negative integer", f[2])
	}
	v.Position = pos
	if v.Genotype == "" || len(v.Genotype) > maxGenotypeCh || strings.Trim(v.Genotype, "ACGTDI-") != "" {
		return v, fmt.Errorf("genotype %q is not made of A, C, G, T, D, I or -", v.Genotype)
	}
	return v, nil
}
