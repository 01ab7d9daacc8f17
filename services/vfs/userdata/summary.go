package userdata

import (
	"context"
	"time"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Endpoints of what an account imported: a summary per kind, indicator and
// import, and the delete of one import.
var (
	Summary      = wire.Endpoint[SummaryRequest, SummaryResponse]{Subject: "vfs.data.summary"}
	ImportDelete = wire.Endpoint[ImportDeleteRequest, DataDeleteResponse]{Subject: "vfs.data.imports.delete"}
)

// SummaryRequest asks what an account's data holds.
type SummaryRequest struct {
	AccountID string `json:"account_id"`
}

// KindSummary counts one data kind's stored rows. First and Last bound the
// health series' times; genetic variants have none.
type KindSummary struct {
	Kind  string     `json:"kind"`
	Rows  int64      `json:"rows"`
	First *time.Time `json:"first,omitempty"`
	Last  *time.Time `json:"last,omitempty"`
}

// ImportSummary is one committed import: Written rows were stored by it,
// Rows of them are still its own (not since deleted or overwritten by a
// later import). An import with no rows left is not listed.
type ImportSummary struct {
	ID      string    `json:"id"`
	Kind    string    `json:"kind"`
	Format  string    `json:"format"`
	Time    time.Time `json:"time"`
	Written int64     `json:"written"`
	Rows    int64     `json:"rows"`
}

// SummaryResponse lists the kinds with data, the health indicators and the
// imports, newest first. Rows stored before imports were logged count in
// Kinds and Indicators but belong to no import.
type SummaryResponse struct {
	Kinds      []KindSummary        `json:"kinds"`
	Indicators []HealthCatalogEntry `json:"indicators"`
	Imports    []ImportSummary      `json:"imports"`
}

// ImportDeleteRequest deletes the rows an import stored that are still its
// own, and the import from the list.
type ImportDeleteRequest struct {
	AccountID string `json:"account_id"`
	ImportID  string `json:"import_id"`
}

// Summary returns what the account's data holds.
func (d *Data) Summary(ctx context.Context, req *SummaryRequest) (*SummaryResponse, error) {
	return Summary.Call(ctx, d.c, req)
}

// DeleteImport deletes one import's rows and announces the change.
func (d *Data) DeleteImport(ctx context.Context, req *ImportDeleteRequest) (*DataDeleteResponse, error) {
	return ImportDelete.Call(ctx, d.c, req)
}
