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

func (s *Service) registerData(data, imports, health, genetic *wire.Group) error {
	return errors.Join(
		wire.Handle(data, "kinds", s.kinds),
		wire.Handle(imports, "begin", s.importBegin),
		wire.Handle(imports, "chunk", s.importChunk),
		wire.Handle(imports, "commit", s.importCommit),
		wire.Handle(imports, "abort", s.importAbort),
		wire.Handle(health, "query", s.queryHealth),
		wire.Handle(health, "delete", s.deleteHealth),
		wire.Handle(genetic, "query", s.queryGenetic),
		wire.Handle(genetic, "delete", s.deleteGenetic),
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
