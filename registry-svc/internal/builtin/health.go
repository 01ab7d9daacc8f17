package builtin

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/mirobody/mirobody-go/services/vfs/userdata"
	"github.com/mirobody/mirobody-go/services/wire"
)

// QueryHealthIndicators returns the query_health_indicators tool
// (registry-svc/design.md "Built-in tools"). It reads the caller's health
// series through vfs-svc; names are expanded through the indicator table, so
// "血糖", "GLU" and "Glucose" find the same rows.
func QueryHealthIndicators() *Tool {
	return &Tool{
		Name: "query_health_indicators",
		Description: "Query the user's own health measurements (lab results, vitals, wearable data). " +
			"mode=catalog lists which indicators exist, with units, counts and date ranges (start here); " +
			"rows returns the measurements, most recent `limit` per indicator; stats returns count/min/max/average per indicator, " +
			"over the whole range or per day, week or month bucket; latest returns the most recent value of each indicator. " +
			"Indicator names may be canonical names, aliases (English or Chinese) or LOINC codes.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"indicators":{"type":"array","items":{"type":"string"},"description":"Indicators to read (names, aliases or LOINC codes); omit for all."},` +
			`"start_time":{"type":"string","description":"Earliest time, an ISO date (2026-01-31) or date-time; omit for no bound."},` +
			`"end_time":{"type":"string","description":"Latest time, an ISO date (the whole day counts) or date-time; omit for no bound."},` +
			`"mode":{"type":"string","enum":["catalog","rows","stats","latest"],"default":"catalog","description":"What to return."},` +
			`"bucket":{"type":"string","enum":["none","day","week","month"],"default":"none","description":"Aggregation bucket for mode=stats (UTC)."},` +
			`"limit":{"type":"integer","minimum":1,"maximum":10000,"default":100,"description":"Rows (or stats buckets) per indicator, most recent first."}},` +
			`"additionalProperties":false}`),
		Annotations:   json.RawMessage(`{"readOnlyHint":true,"openWorldHint":false}`),
		RequiresData:  userdata.KindHealth,
		TakesUserInfo: true,
		Call:          queryHealthIndicators,
	}
}

type healthArgs struct {
	Indicators []string `json:"indicators"`
	StartTime  string   `json:"start_time"`
	EndTime    string   `json:"end_time"`
	Mode       string   `json:"mode"`
	Bucket     string   `json:"bucket"`
	Limit      int      `json:"limit"`
}

// parseWhen parses an ISO date or date-time; a bare end date means the end
// of that day.
func parseWhen(field, s string, end bool) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return &t, nil
		}
	}
	d, err := time.Parse("2006-01-02", s)
	if err != nil {
		return nil, wire.Errorf(wire.InvalidArgument, "%s %q is not an ISO date or date-time", field, s)
	}
	if end {
		d = d.Add(24*time.Hour - time.Nanosecond)
	}
	return &d, nil
}

// healthRequest turns the tool's arguments into a vfs query, expanding
// each name to every name of its indicator. It also returns how each
// given name was resolved.
func healthRequest(account string, args *healthArgs) (*userdata.HealthQueryRequest, map[string]string, error) {
	req := &userdata.HealthQueryRequest{AccountID: account, Mode: args.Mode, Bucket: args.Bucket, Limit: args.Limit}
	if req.Mode == "" {
		req.Mode = userdata.HealthCatalog
	}
	var err error
	if req.Start, err = parseWhen("start_time", args.StartTime, false); err != nil {
		return nil, nil, err
	}
	if req.End, err = parseWhen("end_time", args.EndTime, true); err != nil {
		return nil, nil, err
	}
	resolved := map[string]string{}
	seen := map[string]bool{}
	add := func(n string) {
		if k := strings.ToLower(n); !seen[k] {
			seen[k] = true
			req.Indicators = append(req.Indicators, n)
		}
	}
	for _, name := range args.Indicators {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		add(name)
		if in, ok := Indicators().Lookup(name); ok {
			resolved[name] = in.Name
			for _, n := range in.Names() {
				add(n)
			}
		}
	}
	return req, resolved, nil
}

func queryHealthIndicators(ctx context.Context, req *Request) (any, error) {
	var args healthArgs
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	q, resolved, err := healthRequest(req.User.UserID, &args)
	if err != nil {
		return nil, err
	}
	resp, err := userdata.NewData(req.Deps.Client).QueryHealth(ctx, q)
	if err != nil {
		return nil, err
	}
	return healthResult(q, args.Indicators, resolved, resp), nil
}

// healthResult shapes the answer for a model: the mode's list under a
// stable key, canonical names next to stored ones, and a note when empty.
func healthResult(q *userdata.HealthQueryRequest, given []string, resolved map[string]string, resp *userdata.HealthQueryResponse) map[string]any {
	out := map[string]any{"mode": q.Mode}
	if len(resolved) > 0 {
		out["resolved"] = resolved
	}
	n := 0
	switch q.Mode {
	case userdata.HealthCatalog:
		type entry struct {
			userdata.HealthCatalogEntry
			Canonical string `json:"canonical,omitempty"`
			LOINC     string `json:"loinc,omitempty"`
		}
		list := make([]entry, len(resp.Catalog))
		for i, c := range resp.Catalog {
			list[i] = entry{HealthCatalogEntry: c}
			if in, ok := Indicators().Lookup(c.Indicator); ok {
				list[i].Canonical, list[i].LOINC = in.Name, in.LOINC
			}
		}
		out["indicators"], n = list, len(list)
	case userdata.HealthRows, userdata.HealthLatest:
		out["rows"], n = orEmpty(resp.Rows), len(resp.Rows)
	case userdata.HealthStats:
		b := q.Bucket
		if b == "" {
			b = userdata.BucketNone
		}
		out["bucket"], out["stats"], n = b, orEmpty(resp.Stats), len(resp.Stats)
	}
	if c := healthChart(q, resp); c != nil {
		out["chart"] = c
	}
	if n == 0 {
		note := "No measurements match."
		if len(given) > 0 {
			note = "No measurements for " + strings.Join(given, ", ") + " in this range."
		}
		out["note"] = note + " Call with mode=catalog to see which indicators exist."
	}
	return out
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
