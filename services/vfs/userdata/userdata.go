// Package userdata is the vfs-svc contract of an account's own data: the
// health series and genetic variants stores, their imports and the
// data-kind probe tools are gated on.
package userdata

import (
	"context"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Data kinds that tools can be gated on (registry-svc/design.md "Data gating").
const (
	KindHealth  = "health"
	KindGenetic = "genetic"
)

// Endpoints and events of user data.
var (
	Kinds = wire.Endpoint[DataKindsRequest, DataKindsResponse]{Subject: "vfs.data.kinds", Idempotent: true}
	// DataChanged, for one account (DataChanged.For(account)), is
	// published after an import or delete of its data.
	DataChanged = wire.Event[DataChangedEvent]{Subject: "events.data.changed.*"}
)

// DataKindsRequest asks which data kinds an account holds.
type DataKindsRequest struct {
	AccountID string `json:"account_id"`
}

// DataKindsResponse lists the kinds with at least one row.
type DataKindsResponse struct {
	Kinds []string `json:"kinds"`
}

// DataChangedEvent is published after an import or delete.
type DataChangedEvent struct {
	AccountID string   `json:"account_id"`
	Kinds     []string `json:"kinds"`
}

// Data is the typed client for user data.
type Data struct{ c *wire.Client }

// NewData returns a Data client over c.
func NewData(c *wire.Client) *Data { return &Data{c: c} }

// Kinds returns the data kinds the account holds.
func (d *Data) Kinds(ctx context.Context, req *DataKindsRequest) (*DataKindsResponse, error) {
	return Kinds.Call(ctx, d.c, req)
}
