package userdata

import (
	"context"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Endpoints of the genetic variants store.
var (
	GeneticQuery  = wire.Endpoint[GeneticQueryRequest, GeneticQueryResponse]{Subject: "vfs.data.genetic.query", Idempotent: true}
	GeneticDelete = wire.Endpoint[GeneticDeleteRequest, DataDeleteResponse]{Subject: "vfs.data.genetic.delete"}
)

// GeneticQueryRequest finds variants by rsid, by locus (Chromosome, and
// Position if set) and optionally by Genotype (either allele order). At
// least one of RSIDs or Chromosome is required. With IncludeNearby, each
// hit also lists the variants within NearbyRange bases on its chromosome,
// nearest first (at most NearbyLimit, default 10). Limit (default 100, at
// most 1000) and Offset page through the hits, ordered by chromosome and
// position.
type GeneticQueryRequest struct {
	AccountID     string   `json:"account_id"`
	RSIDs         []string `json:"rsids,omitempty"`
	Chromosome    string   `json:"chromosome,omitempty"`
	Position      *int64   `json:"position,omitempty"`
	Genotype      string   `json:"genotype,omitempty"`
	IncludeNearby bool     `json:"include_nearby,omitempty"`
	NearbyRange   int64    `json:"nearby_range,omitempty"`
	NearbyLimit   int      `json:"nearby_limit,omitempty"`
	Limit         int      `json:"limit,omitempty"`
	Offset        int      `json:"offset,omitempty"`
}

// Variant is one genotyped position.
type Variant struct {
	RSID       string `json:"rsid"`
	Chromosome string `json:"chromosome"`
	Position   int64  `json:"position"`
	Genotype   string `json:"genotype"`
}

// NearbyVariant is a variant near a hit, with its distance in bases.
type NearbyVariant struct {
	Variant
	Distance int64 `json:"distance"`
}

// GeneticHit is one matching variant and its neighbours.
type GeneticHit struct {
	Variant
	Nearby []NearbyVariant `json:"nearby,omitempty"`
}

// GeneticQueryResponse holds one page of hits; Total counts every hit, and
// Missing lists requested rsids the account has no variant for.
type GeneticQueryResponse struct {
	Hits    []GeneticHit `json:"hits"`
	Total   int64        `json:"total"`
	Missing []string     `json:"missing,omitempty"`
}

// GeneticDeleteRequest deletes an account's variants: all of them, or only
// RSIDs.
type GeneticDeleteRequest struct {
	AccountID string   `json:"account_id"`
	RSIDs     []string `json:"rsids,omitempty"`
}

// QueryGenetic reads the genetic variants store.
func (d *Data) QueryGenetic(ctx context.Context, req *GeneticQueryRequest) (*GeneticQueryResponse, error) {
	return GeneticQuery.Call(ctx, d.c, req)
}

// DeleteGenetic deletes variants and announces the change.
func (d *Data) DeleteGenetic(ctx context.Context, req *GeneticDeleteRequest) (*DataDeleteResponse, error) {
	return GeneticDelete.Call(ctx, d.c, req)
}
