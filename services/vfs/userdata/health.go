package userdata

import (
	"context"
	"time"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Endpoints of the health series store.
var (
	HealthQuery  = wire.Endpoint[HealthQueryRequest, HealthQueryResponse]{Subject: "vfs.data.health.query", Idempotent: true}
	HealthDelete = wire.Endpoint[HealthDeleteRequest, DataDeleteResponse]{Subject: "vfs.data.health.delete"}
)

// Health query modes and buckets (registry-svc/design.md "Built-in tools",
// query_health_indicators).
const (
	HealthCatalog = "catalog"
	HealthRows    = "rows"
	HealthStats   = "stats"
	HealthLatest  = "latest"

	BucketNone  = "none"
	BucketDay   = "day"
	BucketWeek  = "week"
	BucketMonth = "month"
)

// HealthQueryRequest reads an account's health series. Indicators are
// matched case-insensitively against the stored names (the caller expands
// aliases); empty means every indicator. Start and End bound the time
// (inclusive, either may be nil). Limit applies per indicator: rows, or
// buckets in stats mode, the most recent first (default 100, at most 10000).
type HealthQueryRequest struct {
	AccountID  string     `json:"account_id"`
	Indicators []string   `json:"indicators,omitempty"`
	Start      *time.Time `json:"start,omitempty"`
	End        *time.Time `json:"end,omitempty"`
	Mode       string     `json:"mode,omitempty"`
	Bucket     string     `json:"bucket,omitempty"`
	Limit      int        `json:"limit,omitempty"`
}

// HealthRow is one measurement.
type HealthRow struct {
	Indicator string    `json:"indicator"`
	Value     float64   `json:"value"`
	Unit      string    `json:"unit"`
	Time      time.Time `json:"time"`
	Source    string    `json:"source,omitempty"`
}

// HealthCatalogEntry summarises one stored indicator.
type HealthCatalogEntry struct {
	Indicator string    `json:"indicator"`
	Unit      string    `json:"unit"`
	Count     int64     `json:"count"`
	First     time.Time `json:"first"`
	Last      time.Time `json:"last"`
}

// HealthStat aggregates one indicator (and unit) over one bucket; Bucket is
// nil when the whole range is one bucket.
type HealthStat struct {
	Indicator string     `json:"indicator"`
	Unit      string     `json:"unit"`
	Bucket    *time.Time `json:"bucket,omitempty"`
	Count     int64      `json:"count"`
	Min       float64    `json:"min"`
	Max       float64    `json:"max"`
	Avg       float64    `json:"avg"`
	First     time.Time  `json:"first"`
	Last      time.Time  `json:"last"`
}

// HealthQueryResponse fills the field of the requested mode; Rows serves
// both rows and latest.
type HealthQueryResponse struct {
	Catalog []HealthCatalogEntry `json:"catalog,omitempty"`
	Rows    []HealthRow          `json:"rows,omitempty"`
	Stats   []HealthStat         `json:"stats,omitempty"`
}

// HealthDeleteRequest deletes an account's health rows: all of them, or
// those of Indicators (case-insensitive) within the optional time range.
type HealthDeleteRequest struct {
	AccountID  string     `json:"account_id"`
	Indicators []string   `json:"indicators,omitempty"`
	Start      *time.Time `json:"start,omitempty"`
	End        *time.Time `json:"end,omitempty"`
}

// DataDeleteResponse counts the rows deleted.
type DataDeleteResponse struct {
	Deleted int64 `json:"deleted"`
}

// QueryHealth reads the health series store.
func (d *Data) QueryHealth(ctx context.Context, req *HealthQueryRequest) (*HealthQueryResponse, error) {
	return HealthQuery.Call(ctx, d.c, req)
}

// DeleteHealth deletes health rows and announces the change.
func (d *Data) DeleteHealth(ctx context.Context, req *HealthDeleteRequest) (*DataDeleteResponse, error) {
	return HealthDelete.Call(ctx, d.c, req)
}
