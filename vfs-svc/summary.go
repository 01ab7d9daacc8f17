package vfssvc

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/mirobody/mirobody-go/services/vfs/userdata"
	"github.com/mirobody/mirobody-go/services/wire"
)

// summary answers what an account's data holds: rows per kind, the health
// catalog and the imports whose rows are still stored.
func (s *Service) summary(ctx context.Context, req *userdata.SummaryRequest) (*userdata.SummaryResponse, error) {
	if err := checkAccount(req.AccountID); err != nil {
		return nil, err
	}
	resp := &userdata.SummaryResponse{Kinds: []userdata.KindSummary{}, Imports: []userdata.ImportSummary{}}
	hs := userdata.KindSummary{Kind: userdata.KindHealth}
	gs := userdata.KindSummary{Kind: userdata.KindGenetic}
	err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM health_series WHERE account_id = $1),
			(SELECT min(time) FROM health_series WHERE account_id = $1),
			(SELECT max(time) FROM health_series WHERE account_id = $1),
			(SELECT count(*) FROM genetic_variants WHERE account_id = $1)`, req.AccountID).
		Scan(&hs.Rows, &hs.First, &hs.Last, &gs.Rows)
	if err != nil {
		return nil, fmt.Errorf("counting data: %w", err)
	}
	for _, k := range []userdata.KindSummary{hs, gs} {
		if k.Rows > 0 {
			if k.First != nil {
				f, l := k.First.UTC(), k.Last.UTC()
				k.First, k.Last = &f, &l
			}
			resp.Kinds = append(resp.Kinds, k)
		}
	}
	cat, err := s.queryHealth(ctx, &userdata.HealthQueryRequest{AccountID: req.AccountID, Mode: userdata.HealthCatalog})
	if err != nil {
		return nil, err
	}
	resp.Indicators = cat.Catalog
	if resp.Indicators == nil {
		resp.Indicators = []userdata.HealthCatalogEntry{}
	}
	// The per-import counts use the (account_id, import_id) indexes.
	rows, err := s.pool.Query(ctx, `SELECT l.id, l.kind, l.format, l.created, l.written,
			CASE l.kind WHEN 'health' THEN (SELECT count(*) FROM health_series h WHERE h.account_id = l.account_id AND h.import_id = l.id)
				ELSE (SELECT count(*) FROM genetic_variants g WHERE g.account_id = l.account_id AND g.import_id = l.id) END AS n
		FROM data_import_log l WHERE l.account_id = $1 ORDER BY l.created DESC, l.id`, req.AccountID)
	if err != nil {
		return nil, fmt.Errorf("listing imports: %w", err)
	}
	imports, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (userdata.ImportSummary, error) {
		var i userdata.ImportSummary
		err := r.Scan(&i.ID, &i.Kind, &i.Format, &i.Time, &i.Written, &i.Rows)
		i.Time = i.Time.UTC()
		return i, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing imports: %w", err)
	}
	for _, i := range imports {
		if i.Rows > 0 {
			resp.Imports = append(resp.Imports, i)
		}
	}
	return resp, nil
}

// deleteImport deletes the rows an import stored that are still its own,
// and its log entry.
func (s *Service) deleteImport(ctx context.Context, req *userdata.ImportDeleteRequest) (*userdata.DataDeleteResponse, error) {
	if err := checkAccount(req.AccountID); err != nil {
		return nil, err
	}
	if _, err := uuid.Parse(req.ImportID); err != nil {
		return nil, wire.Errorf(wire.InvalidArgument, "import id %q is not a UUID", req.ImportID)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("beginning transaction: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var kind string
	err = tx.QueryRow(ctx, `DELETE FROM data_import_log WHERE id = $1 AND account_id = $2 RETURNING kind`,
		req.ImportID, req.AccountID).Scan(&kind)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, wire.Errorf(wire.NotFound, "no import %s for this account", req.ImportID)
	}
	if err != nil {
		return nil, fmt.Errorf("deleting import: %w", err)
	}
	table := "health_series"
	if kind == userdata.KindGenetic {
		table = "genetic_variants"
	}
	tag, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE account_id = $1 AND import_id = $2`, req.AccountID, req.ImportID)
	if err != nil {
		return nil, fmt.Errorf("deleting import rows: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("committing import delete: %w", err)
	}
	s.announce(ctx, req.AccountID, kind)
	return &userdata.DataDeleteResponse{Deleted: tag.RowsAffected()}, nil
}
