package builtin

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/vfs/userdata"
	"github.com/mirobody/mirobody-go/services/wire"
)

func TestHealthRequest(t *testing.T) {
	req, resolved, err := healthRequest("acct", &healthArgs{
		Indicators: []string{"血糖", "O'Brien; DROP TABLE x", "GLU"},
		StartTime:  "2026-01-01", EndTime: "2026-01-31", Mode: "stats", Bucket: "week", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if req.AccountID != "acct" || req.Mode != userdata.HealthStats || req.Bucket != userdata.BucketWeek || req.Limit != 5 {
		t.Errorf("request = %+v", req)
	}
	if !req.Start.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) || !req.End.Equal(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC).Add(-time.Nanosecond)) {
		t.Errorf("range = %v .. %v", req.Start, req.End)
	}
	for _, want := range []string{"血糖", "Glucose", "2345-7", "blood sugar", "O'Brien; DROP TABLE x"} {
		if !slices.Contains(req.Indicators, want) {
			t.Errorf("indicators %v lack %q", req.Indicators, want)
		}
	}
	if strings.Count(strings.ToLower(strings.Join(req.Indicators, "|")), "|glu|") > 1 {
		t.Errorf("duplicates in %v", req.Indicators)
	}
	if resolved["血糖"] != "Glucose" || resolved["GLU"] != "Glucose" || len(resolved) != 2 {
		t.Errorf("resolved = %v", resolved)
	}
	_, _, err = healthRequest("acct", &healthArgs{StartTime: "last week"})
	if wire.CodeOf(err) != wire.InvalidArgument {
		t.Errorf("bad time: %v", err)
	}
	req, _, _ = healthRequest("acct", &healthArgs{EndTime: "2026-01-31T10:00:00Z"})
	if req.Mode != userdata.HealthCatalog || !req.End.Equal(time.Date(2026, 1, 31, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("defaults = %+v", req)
	}
}

func TestHealthResult(t *testing.T) {
	q := &userdata.HealthQueryRequest{Mode: userdata.HealthCatalog}
	got := healthResult(q, nil, nil, &userdata.HealthQueryResponse{Catalog: []userdata.HealthCatalogEntry{{Indicator: "HbA1c", Unit: "%", Count: 2}}})
	b, _ := json.Marshal(got)
	if !strings.Contains(string(b), `"canonical":"Hemoglobin A1c","loinc":"4548-4"`) || strings.Contains(string(b), "note") {
		t.Errorf("catalog = %s", b)
	}
	got = healthResult(&userdata.HealthQueryRequest{Mode: userdata.HealthRows}, []string{"LDL"}, nil, &userdata.HealthQueryResponse{})
	b, _ = json.Marshal(got)
	if string(b) != `{"mode":"rows","note":"No measurements for LDL in this range. Call with mode=catalog to see which indicators exist.","rows":[]}` {
		t.Errorf("empty rows = %s", b)
	}
}

func TestGeneticRequest(t *testing.T) {
	tests := []struct {
		args    string
		want    []string
		nearby  bool
		failure bool
	}{
		{`{"rsid":"rs429358, rs7412,"}`, []string{"rs429358", "rs7412"}, true, false},
		{`{"rsid":["rs1';DROP TABLE x;--"],"include_nearby":false}`, []string{"rs1';DROP TABLE x;--"}, false, false},
		{`{"chromosome":"19","position":45411941}`, nil, true, false},
		{`{"rsid":""}`, nil, false, true},
		{`{}`, nil, false, true},
		{`{"rsid":5}`, nil, false, true},
	}
	for _, tt := range tests {
		var args geneticArgs
		if err := json.Unmarshal([]byte(tt.args), &args); err != nil {
			t.Fatal(err)
		}
		req, err := geneticRequest("acct", &args)
		if tt.failure {
			var te *ToolError
			if err == nil || (!errors.As(err, &te) && wire.CodeOf(err) != wire.InvalidArgument) {
				t.Errorf("%s: got %+v, %v", tt.args, req, err)
			}
			continue
		}
		if err != nil || !slices.Equal(req.RSIDs, tt.want) || req.IncludeNearby != tt.nearby || req.AccountID != "acct" {
			t.Errorf("%s: got %+v, %v", tt.args, req, err)
		}
	}
}
