package vfssvc

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/vfs/userdata"
)

// TestImportHygiene: imports of awkward input give line-numbered errors
// and lose no valid row: a file whose text JSON escapes heavily still
// fits its chunks in the NATS max payload, a Latin-1 file is one error
// per line that says so, and one huge line is one error (not one per
// chunk), with partial=true keeping the rows around it.
func TestImportHygiene(t *testing.T) {
	e := start(t, nil)
	acct := e.account(t)

	// Every line JSON would escape to several times its size: control
	// characters (in comments), quotes, backslashes, <>&, U+2028, emoji.
	var b strings.Builder
	b.WriteString("indicator,value,unit,time\n")
	const rows = 4000
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range rows {
		b.WriteString("# " + strings.Repeat("\x01\x1f\"\\<>&", 61) + "\n") // an odd number of quotes
		fmt.Fprintf(&b, "\"He said \"\"hi\"\" \\ <b>&amp; \u2028 é😀\",%d,\"u\\\"\"<>\",%s\n", i, t0.Add(time.Duration(i)*time.Minute).Format(time.RFC3339))
	}
	if b.Len() < 1<<20 {
		t.Fatalf("the escape-heavy file is only %d bytes", b.Len())
	}
	res := e.importText(t, acct, userdata.KindHealth, userdata.FormatCSV, false, b.String())
	if !res.Committed || res.Valid != rows || res.Written != rows || res.ErrorCount != 0 {
		t.Fatalf("escape-heavy import = %+v", res)
	}
	var stored string
	if err := e.pool.QueryRow(ctx(t), `SELECT indicator || '|' || unit FROM health_series WHERE account_id = $1 LIMIT 1`, acct).Scan(&stored); err != nil ||
		stored != "He said \"hi\" \\ <b>&amp; \u2028 é😀|u\\\"<>" {
		t.Errorf("stored %q, %v", stored, err)
	}

	latin1 := "indicator,value,unit,time\nGlucose,5.1,mmol/L,2026-02-01\nCaf\xe9ine,1,mg,2026-02-01\nPoids,70,kg \xb0,2026-02-01\n"
	res = e.importText(t, acct, userdata.KindHealth, userdata.FormatCSV, false, latin1)
	if res.Committed || res.ErrorCount != 2 || len(res.Errors) != 2 || res.Errors[0].Line != 3 || res.Errors[1].Line != 4 ||
		!strings.Contains(res.Errors[0].Message, "UTF-8") {
		t.Errorf("Latin-1 import = %+v", res)
	}

	huge := "indicator,value,unit,time\nGlucose,5.2,mmol/L,2026-03-01\n" + strings.Repeat("x", 50<<20) + "\nGlucose,5.3,mmol/L,2026-03-02\n"
	for _, partial := range []bool{false, true} {
		res = e.importText(t, acct, userdata.KindHealth, userdata.FormatCSV, partial, huge)
		if res.ErrorCount != 1 || len(res.Errors) != 1 || res.Errors[0].Line != 3 || !strings.Contains(res.Errors[0].Message, "longer than") ||
			res.Valid != 2 || res.Committed != partial || partial && res.Written != 2 {
			t.Errorf("partial=%v: huge line import = %+v", partial, res)
		}
	}
	res = e.importText(t, acct, userdata.KindHealth, userdata.FormatCSV, false, strings.Repeat("y", 50<<20))
	if res.Committed || res.ErrorCount != 1 || res.Errors[0].Line != 1 {
		t.Errorf("no newline at all = %+v", res)
	}
}

// TestImportMalformedCSV: a line with a bare quote is a line error of the
// import, not a failed request (it was an internal error from a panic).
func TestImportMalformedCSV(t *testing.T) {
	e := start(t, nil)
	acct := e.account(t)
	res := e.importText(t, acct, userdata.KindHealth, userdata.FormatCSV, true, "indicator,value,unit,time\nGlucose,5.1,mmol/L,2026-02-01\na\"b\nGlucose,5.2,mmol/L,2026-02-02\n")
	if !res.Committed || res.Written != 2 || res.ErrorCount != 1 || res.Errors[0].Line != 3 || !strings.Contains(res.Errors[0].Message, `bare "`) {
		t.Errorf("import with a bare quote = %+v", res)
	}
}
