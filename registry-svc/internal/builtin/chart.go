package builtin

import (
	"cmp"
	"slices"
	"time"

	"github.com/mirobody/mirobody-go/services/vfs/userdata"
)

// Chart is the small chart spec a tool result carries under "chart"
// (registry-svc/design.md "Charts in chat"): the chat draws it with uPlot,
// one line per series, time on the x axis. The web app is its only reader;
// models see it as part of the JSON result.
type Chart struct {
	Type   string        `json:"type"`
	Title  string        `json:"title,omitempty"`
	Series []ChartSeries `json:"series"`
}

// ChartSeries is one indicator in one unit: T holds Unix seconds, in
// ascending order, and V the values at those times.
type ChartSeries struct {
	Name string    `json:"name"`
	Unit string    `json:"unit,omitempty"`
	T    []int64   `json:"t"`
	V    []float64 `json:"v"`
}

// maxChartSeries keeps a chart readable.
const maxChartSeries = 6

// healthChart charts rows, or bucketed stats (their averages), one series
// per indicator and unit; nil when there is nothing to draw over time.
// A series of one point is drawn as a dot.
func healthChart(q *userdata.HealthQueryRequest, resp *userdata.HealthQueryResponse) *Chart {
	type point struct {
		t time.Time
		v float64
	}
	type key struct{ name, unit string }
	series := map[key][]point{}
	var order []key
	add := func(k key, p point) {
		if _, ok := series[k]; !ok {
			order = append(order, k)
		}
		series[k] = append(series[k], p)
	}
	title := "Health measurements"
	switch {
	case q.Mode == userdata.HealthRows:
		for _, r := range resp.Rows {
			add(key{r.Indicator, r.Unit}, point{r.Time, r.Value})
		}
	case q.Mode == userdata.HealthStats && q.Bucket != "" && q.Bucket != userdata.BucketNone:
		title = "Average per " + q.Bucket
		for _, s := range resp.Stats {
			if s.Bucket != nil {
				add(key{s.Indicator, s.Unit}, point{*s.Bucket, s.Avg})
			}
		}
	default:
		return nil
	}
	c := &Chart{Type: "timeseries", Title: title}
	for _, k := range order[:min(len(order), maxChartSeries)] {
		pts := series[k]
		slices.SortFunc(pts, func(a, b point) int { return cmp.Compare(a.t.UnixNano(), b.t.UnixNano()) })
		s := ChartSeries{Name: k.name, Unit: k.unit}
		for _, p := range pts {
			s.T, s.V = append(s.T, p.t.Unix()), append(s.V, p.v)
		}
		c.Series = append(c.Series, s)
	}
	if len(c.Series) == 0 {
		return nil
	}
	return c
}
