package vfssvc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Durable revocations of the authorization server: revoked access tokens
// and killed grants, kept until what they name has expired. Every gateway
// replica loads them at start and polls for new ones (gateway/design.md
// "Revocation").

// maxRevocationsPerAdd bounds one add request.
const maxRevocationsPerAdd = 100

func (s *Service) registerRevocations(svc *wire.Service) error {
	return errors.Join(
		wire.Serve(svc, accounts.OAuthRevocationsAdd, s.addRevocations),
		wire.Serve(svc, accounts.OAuthRevocationsList, s.listRevocations),
		wire.Serve(svc, accounts.OAuthLoginsAttempt, s.loginAttempt),
		wire.Serve(svc, accounts.OAuthLoginsSucceeded, s.loginSucceeded),
	)
}

func (s *Service) addRevocations(ctx context.Context, req *accounts.RevocationAddRequest) (*wire.Empty, error) {
	if len(req.Revocations) == 0 || len(req.Revocations) > maxRevocationsPerAdd {
		return nil, wire.Errorf(wire.InvalidArgument, "an add holds 1 to %d revocations", maxRevocationsPerAdd)
	}
	for _, r := range req.Revocations {
		if (r.Kind != accounts.RevokedToken && r.Kind != accounts.RevokedGrant) || r.ID == "" || len(r.ID) > 200 || r.Until.IsZero() {
			return nil, wire.Errorf(wire.InvalidArgument, "a revocation needs a kind (token or grant), an id and an until")
		}
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("storing revocations: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `DELETE FROM oauth_revocations WHERE until < now()`); err != nil {
		return nil, fmt.Errorf("dropping expired revocations: %w", err)
	}
	for _, r := range req.Revocations {
		if err := revoke(ctx, tx, r.Kind, r.ID, r.Until); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("storing revocations: %w", err)
	}
	return &wire.Empty{}, nil
}

// revoke stores one revocation. A repeated one keeps the later until and
// counts as new (created moves), so replicas that poll pick it up again.
func revoke(ctx context.Context, tx pgx.Tx, kind, id string, until time.Time) error {
	if _, err := tx.Exec(ctx, `INSERT INTO oauth_revocations (kind, id, until) VALUES ($1, $2, $3)
		ON CONFLICT (kind, id) DO UPDATE SET until = greatest(oauth_revocations.until, excluded.until), created = now()`,
		kind, id, until); err != nil {
		return fmt.Errorf("storing a revocation: %w", err)
	}
	return nil
}

// killGrant refuses every access token issued from family, for as long
// as one of them can live.
func killGrant(ctx context.Context, tx pgx.Tx, family string) error {
	return revoke(ctx, tx, accounts.RevokedGrant, family, time.Now().Add(accounts.GrantKillTTL))
}

func (s *Service) listRevocations(ctx context.Context, req *accounts.RevocationListRequest) (*accounts.RevocationListResponse, error) {
	var now time.Time
	if err := s.pool.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		return nil, fmt.Errorf("reading the clock: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT kind, id, until FROM oauth_revocations WHERE until > $1 AND created >= $2 ORDER BY created`,
		now, req.Since)
	if err != nil {
		return nil, fmt.Errorf("listing revocations: %w", err)
	}
	revs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (accounts.Revocation, error) {
		var v accounts.Revocation
		err := r.Scan(&v.Kind, &v.ID, &v.Until)
		return v, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing revocations: %w", err)
	}
	return &accounts.RevocationListResponse{Revocations: revs, Now: now}, nil
}
