package builtin

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/vfs/userdata"
)

func TestHealthChart(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 3, d, 0, 0, 0, 0, time.UTC) }
	b1, b2 := day(1), day(8)
	tests := []struct {
		name string
		q    userdata.HealthQueryRequest
		resp userdata.HealthQueryResponse
		want string // the chart as JSON; "null" for none
	}{
		{"rows, newest first, one series per indicator and unit", userdata.HealthQueryRequest{Mode: userdata.HealthRows}, userdata.HealthQueryResponse{Rows: []userdata.HealthRow{
			{Indicator: "Glucose", Value: 5.4, Unit: "mmol/L", Time: day(14)}, {Indicator: "Glucose", Value: 6.1, Unit: "mmol/L", Time: day(2)},
			{Indicator: "Glucose", Value: 99, Unit: "mg/dL", Time: day(3)}}},
			`{"type":"timeseries","title":"Health measurements","series":[{"name":"Glucose","unit":"mmol/L","t":[1772409600,1773446400],"v":[6.1,5.4]},{"name":"Glucose","unit":"mg/dL","t":[1772496000],"v":[99]}]}`},
		{"bucketed stats chart their averages", userdata.HealthQueryRequest{Mode: userdata.HealthStats, Bucket: userdata.BucketWeek}, userdata.HealthQueryResponse{Stats: []userdata.HealthStat{
			{Indicator: "HR", Unit: "bpm", Bucket: &b2, Avg: 61}, {Indicator: "HR", Unit: "bpm", Bucket: &b1, Avg: 64}}},
			`{"type":"timeseries","title":"Average per week","series":[{"name":"HR","unit":"bpm","t":[1772323200,1772928000],"v":[64,61]}]}`},
		{"stats over the whole range: no chart", userdata.HealthQueryRequest{Mode: userdata.HealthStats}, userdata.HealthQueryResponse{Stats: []userdata.HealthStat{{Indicator: "HR", Avg: 61}}}, "null"},
		{"the catalog: no chart", userdata.HealthQueryRequest{Mode: userdata.HealthCatalog}, userdata.HealthQueryResponse{}, "null"},
		{"no rows: no chart", userdata.HealthQueryRequest{Mode: userdata.HealthRows}, userdata.HealthQueryResponse{}, "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := json.Marshal(healthChart(&tt.q, &tt.resp))
			if string(b) != tt.want {
				t.Errorf("chart = %s\nwant    %s", b, tt.want)
			}
		})
	}
}
