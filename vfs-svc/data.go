package vfssvc

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mirobody/mirobody-go/services/vfs/userdata"
	"github.com/mirobody/mirobody-go/services/wire"
)

func (s *Service) registerData(svc *wire.Service) error {
	return errors.Join(
		wire.Serve(svc, userdata.Kinds, s.kinds),
		wire.Serve(svc, userdata.ImportBegin, s.importBegin),
		wire.Serve(svc, userdata.ImportChunk, s.importChunk),
		wire.Serve(svc, userdata.ImportCommit, s.importCommit),
		wire.Serve(svc, userdata.ImportAbort, s.importAbort),
		wire.Serve(svc, userdata.HealthQuery, s.queryHealth),
		wire.Serve(svc, userdata.HealthDelete, s.deleteHealth),
		wire.Serve(svc, userdata.GeneticQuery, s.queryGenetic),
		wire.Serve(svc, userdata.GeneticDelete, s.deleteGenetic),
		wire.Serve(svc, userdata.Summary, s.summary),
		wire.Serve(svc, userdata.ImportDelete, s.deleteImport),
	)
}

func checkAccount(id string) error {
	if _, err := uuid.Parse(id); err != nil {
		return wire.Errorf(wire.InvalidArgument, "account id %q is not a UUID", id)
	}
	return nil
}

// kinds answers which data kinds an account holds, with one indexed
// EXISTS probe per kind (each stops at the first row of the primary key).
func (s *Service) kinds(ctx context.Context, req *userdata.DataKindsRequest) (*userdata.DataKindsResponse, error) {
	if err := checkAccount(req.AccountID); err != nil {
		return nil, err
	}
	var health, genetic bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM health_series WHERE account_id = $1),
		EXISTS (SELECT 1 FROM genetic_variants WHERE account_id = $1)`, req.AccountID).Scan(&health, &genetic)
	if err != nil {
		return nil, fmt.Errorf("probing data kinds: %w", err)
	}
	resp := &userdata.DataKindsResponse{Kinds: []string{}}
	if health {
		resp.Kinds = append(resp.Kinds, userdata.KindHealth)
	}
	if genetic {
		resp.Kinds = append(resp.Kinds, userdata.KindGenetic)
	}
	return resp, nil
}

func isForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503"
}
