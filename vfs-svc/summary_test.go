package vfssvc

import (
	"testing"

	"github.com/mirobody/mirobody-go/services/vfs/userdata"
	"github.com/mirobody/mirobody-go/services/wire"
)

// TestSummaryAndImportDelete: the summary lists kinds, indicators and the
// imports whose rows are still stored; deleting one import removes only
// the rows it still owns (a row a later import overwrote belongs to that
// one).
func TestSummaryAndImportDelete(t *testing.T) {
	e := start(t, nil)
	acct := e.account(t)
	sum := func() *userdata.SummaryResponse {
		t.Helper()
		s, err := e.data.Summary(ctx(t), &userdata.SummaryRequest{AccountID: acct})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := sum(); len(s.Kinds) != 0 || len(s.Indicators) != 0 || len(s.Imports) != 0 {
		t.Fatalf("fresh summary = %+v", s)
	}
	e.importText(t, acct, userdata.KindHealth, userdata.FormatCSV, false,
		"Glucose,5.1,mmol/L,2026-01-01\nGlucose,5.4,mmol/L,2026-01-02\nPulse,60,bpm,2026-01-01\n")
	e.importText(t, acct, userdata.KindHealth, userdata.FormatCSV, false, "Glucose,5.5,mmol/L,2026-01-02\n") // overwrites one row
	e.importText(t, acct, userdata.KindGenetic, userdata.FormatRaw, false, "rs1\t1\t100\tAG\nrs2\t2\t200\tCC\n")

	s := sum()
	if len(s.Kinds) != 2 || s.Kinds[0].Kind != userdata.KindHealth || s.Kinds[0].Rows != 3 || s.Kinds[0].First == nil ||
		s.Kinds[0].First.Format("2006-01-02") != "2026-01-01" || s.Kinds[1].Kind != userdata.KindGenetic || s.Kinds[1].Rows != 2 {
		t.Errorf("kinds = %+v", s.Kinds)
	}
	if len(s.Indicators) != 2 || s.Indicators[0].Indicator != "Glucose" || s.Indicators[0].Count != 2 || s.Indicators[0].Unit != "mmol/L" {
		t.Errorf("indicators = %+v", s.Indicators)
	}
	if len(s.Imports) != 3 {
		t.Fatalf("imports = %+v", s.Imports)
	}
	gen, second, first := s.Imports[0], s.Imports[1], s.Imports[2] // newest first
	if gen.Kind != userdata.KindGenetic || gen.Rows != 2 || second.Rows != 1 || first.Written != 3 || first.Rows != 2 {
		t.Errorf("imports = %+v", s.Imports)
	}

	del, err := e.data.DeleteImport(ctx(t), &userdata.ImportDeleteRequest{AccountID: acct, ImportID: first.ID})
	if err != nil || del.Deleted != 2 {
		t.Fatalf("delete first import = %+v, %v", del, err)
	}
	s = sum()
	if len(s.Imports) != 2 || s.Kinds[0].Rows != 1 || len(s.Indicators) != 1 {
		t.Errorf("after delete: %+v", s)
	}
	_, err = e.data.DeleteImport(ctx(t), &userdata.ImportDeleteRequest{AccountID: acct, ImportID: first.ID})
	wantCode(t, err, wire.NotFound)
	_, err = e.data.DeleteImport(ctx(t), &userdata.ImportDeleteRequest{AccountID: e.account(t), ImportID: gen.ID})
	wantCode(t, err, wire.NotFound) // another account's import
	_, err = e.data.DeleteImport(ctx(t), &userdata.ImportDeleteRequest{AccountID: acct, ImportID: "x"})
	wantCode(t, err, wire.InvalidArgument)

	// Deleting a whole kind empties its imports from the list.
	if _, err := e.data.DeleteHealth(ctx(t), &userdata.HealthDeleteRequest{AccountID: acct}); err != nil {
		t.Fatal(err)
	}
	if s = sum(); len(s.Imports) != 1 || s.Imports[0].Kind != userdata.KindGenetic {
		t.Errorf("after kind delete: %+v", s.Imports)
	}
}
