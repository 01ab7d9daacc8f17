package vfssvc

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/mirobody/mirobody-go/services/vfs/userdata"
	"github.com/mirobody/mirobody-go/services/wire"
)

// maxChunkBytes bounds one chunk's data (userdata.ChunkBytes plus room for one
// long line).
const maxChunkBytes = 2 * userdata.ChunkBytes

// staleImport is how long an import may stay open; older ones are dropped
// when the next import begins.
const staleImport = "1 hour"

func (s *Service) importBegin(ctx context.Context, req *userdata.ImportBeginRequest) (*userdata.ImportBeginResponse, error) {
	if _, err := uuid.Parse(req.AccountID); err != nil {
		return nil, wire.Errorf(wire.InvalidArgument, "account id %q is not a UUID", req.AccountID)
	}
	switch {
	case req.Kind == userdata.KindHealth && (req.Format == userdata.FormatCSV || req.Format == userdata.FormatNDJSON):
	case req.Kind == userdata.KindGenetic && req.Format == userdata.FormatRaw:
	default:
		return nil, wire.Errorf(wire.InvalidArgument, "cannot import kind %q in format %q", req.Kind, req.Format)
	}
	if _, err := s.pool.Exec(ctx, `WITH old AS (DELETE FROM data_imports WHERE created < now() - $1::interval RETURNING id),
		h AS (DELETE FROM import_health WHERE import_id IN (SELECT id FROM old)),
		g AS (DELETE FROM import_genetic WHERE import_id IN (SELECT id FROM old))
		DELETE FROM data_import_results WHERE created < now() - $1::interval`, staleImport); err != nil {
		return nil, fmt.Errorf("dropping stale imports: %w", err)
	}
	id := req.ImportID
	if id == "" {
		id = uuid.NewString()
	} else if _, err := uuid.Parse(id); err != nil {
		return nil, wire.Errorf(wire.InvalidArgument, "import id %q is not a UUID", id)
	}
	// A begin sent again (its first answer was lost) finds its import
	// still unused and answers the same; any other use of the id is refused.
	var fresh bool
	err := s.pool.QueryRow(ctx, `WITH ins AS (INSERT INTO data_imports (id, account_id, kind, format)
			SELECT $1, $2, $3, $4 WHERE NOT EXISTS (SELECT 1 FROM data_import_results WHERE id = $1)
			ON CONFLICT (id) DO NOTHING RETURNING id)
		SELECT EXISTS (SELECT 1 FROM ins) OR EXISTS (SELECT 1 FROM data_imports
			WHERE id = $1 AND account_id = $2 AND kind = $3 AND format = $4 AND next_seq = 0)`,
		id, req.AccountID, req.Kind, req.Format).Scan(&fresh)
	if isForeignKeyViolation(err) {
		return nil, wire.Errorf(wire.NotFound, "no such account")
	}
	if err != nil {
		return nil, fmt.Errorf("opening import: %w", err)
	}
	if !fresh {
		return nil, wire.Errorf(wire.AlreadyExists, "import %s is already in use", id)
	}
	return &userdata.ImportBeginResponse{ImportID: id}, nil
}

func (s *Service) importChunk(ctx context.Context, req *userdata.ImportChunkRequest) (*userdata.ImportChunkResponse, error) {
	if len(req.Data) > maxChunkBytes {
		return nil, wire.Errorf(wire.InvalidArgument, "chunk of %d bytes is larger than %d", len(req.Data), maxChunkBytes)
	}
	if req.FirstLine < 1 {
		return nil, wire.Errorf(wire.InvalidArgument, "first_line must be at least 1")
	}
	if len(req.LineErrors) > userdata.MaxLineErrors {
		return nil, wire.Errorf(wire.InvalidArgument, "a chunk carries at most %d line errors", userdata.MaxLineErrors)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("beginning transaction: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	imp, err := lockImport(ctx, tx, req.AccountID, req.ImportID)
	if err != nil {
		return nil, err
	}
	digest := sha256.Sum256(req.Data)
	if req.Seq == imp.nextSeq-1 && imp.lastAnswer != nil && bytes.Equal(imp.lastDigest, digest[:]) {
		// The chunk again, after its answer was lost: the same answer.
		var resp userdata.ImportChunkResponse
		if err := json.Unmarshal(imp.lastAnswer, &resp); err != nil {
			return nil, fmt.Errorf("decoding the chunk's answer: %w", err)
		}
		return &resp, nil
	}
	if req.Seq != imp.nextSeq {
		return nil, wire.Errorf(wire.FailedPrecondition, "chunk %d arrived, chunk %d was expected", req.Seq, imp.nextSeq)
	}
	data := string(req.Data)
	if req.Seq == 0 {
		data = strings.TrimPrefix(data, "\ufeff") // spreadsheet exports start with a BOM
	}
	var src pgx.CopyFromSource
	var table string
	var cols []string
	var n int
	var errs []userdata.LineError
	switch {
	case imp.kind == userdata.KindGenetic:
		var rows []geneticRow
		rows, errs = parseGenetic(data, req.FirstLine)
		n, table, cols = len(rows), "import_genetic", []string{"import_id", "line", "rsid", "chromosome", "position", "genotype"}
		src = pgx.CopyFromSlice(n, func(i int) ([]any, error) {
			r := rows[i]
			return []any{req.ImportID, r.line, r.RSID, r.Chromosome, r.Position, r.Genotype}, nil
		})
	default:
		var rows []healthRow
		if imp.format == userdata.FormatCSV {
			rows, errs = parseHealthCSV(data, req.FirstLine)
		} else {
			rows, errs = parseHealthNDJSON(data, req.FirstLine)
		}
		n, table, cols = len(rows), "import_health", []string{"import_id", "line", "indicator", "value", "unit", "time", "source"}
		src = pgx.CopyFromSlice(n, func(i int) ([]any, error) {
			r := rows[i]
			return []any{req.ImportID, r.line, r.Indicator, r.Value, r.Unit, r.Time, r.Source}, nil
		})
	}
	// The sender's own line errors (over-long lines) count like ours.
	errs = append(req.LineErrors, errs...)
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{table}, cols, src); err != nil {
		return nil, fmt.Errorf("staging chunk: %w", err)
	}
	resp := &userdata.ImportChunkResponse{Rows: int64(n), Errors: errs}
	answer, err := json.Marshal(resp)
	if err != nil {
		return nil, fmt.Errorf("encoding the chunk's answer: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE data_imports SET next_seq = next_seq + 1, valid = valid + $2, errors = errors + $3,
		last_digest = $4, last_answer = $5 WHERE id = $1`,
		req.ImportID, n, len(errs), digest[:], answer); err != nil {
		return nil, fmt.Errorf("recording chunk: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("committing chunk: %w", err)
	}
	return resp, nil
}

// openImport is an import session's state.
type openImport struct {
	kind, format          string
	nextSeq, valid, nerrs int64
	// lastDigest and lastAnswer are the SHA-256 of the last chunk's data
	// and its answer, for a resend of that chunk.
	lastDigest, lastAnswer []byte
}

// lockImport locks the account's import row for the transaction, so that
// chunks and the commit of one import never interleave.
func lockImport(ctx context.Context, tx pgx.Tx, account, id string) (*openImport, error) {
	if _, err := uuid.Parse(account); err != nil {
		return nil, wire.Errorf(wire.InvalidArgument, "account id %q is not a UUID", account)
	}
	if _, err := uuid.Parse(id); err != nil {
		return nil, wire.Errorf(wire.InvalidArgument, "import id %q is not a UUID", id)
	}
	var imp openImport
	err := tx.QueryRow(ctx, `SELECT kind, format, next_seq, valid, errors, last_digest, last_answer FROM data_imports
		WHERE id = $1 AND account_id = $2 FOR UPDATE`, id, account).
		Scan(&imp.kind, &imp.format, &imp.nextSeq, &imp.valid, &imp.nerrs, &imp.lastDigest, &imp.lastAnswer)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, wire.Errorf(wire.NotFound, "no open import %s for this account", id)
	}
	if err != nil {
		return nil, fmt.Errorf("reading import: %w", err)
	}
	return &imp, nil
}

// dropImport removes an import and its staged rows.
func dropImport(ctx context.Context, tx pgx.Tx, id string) error {
	_, err := tx.Exec(ctx, `WITH i AS (DELETE FROM data_imports WHERE id = $1),
		h AS (DELETE FROM import_health WHERE import_id = $1)
		DELETE FROM import_genetic WHERE import_id = $1`, id)
	if err != nil {
		return fmt.Errorf("dropping import: %w", err)
	}
	return nil
}

// Upserts from the staging tables. The last line wins among duplicates
// within one import (ON CONFLICT cannot touch a row twice), and a row
// already stored is updated in place, so importing a file twice changes
// nothing. Each row names the import that last wrote it, for the import
// list and per-import delete (data_import_log).
const (
	upsertHealth = `WITH src AS (
			SELECT DISTINCT ON (indicator, time, source) indicator, value, unit, time, source
			FROM import_health WHERE import_id = $1 ORDER BY indicator, time, source, line DESC),
		up AS (INSERT INTO health_series (account_id, indicator, value, unit, time, source, import_id)
			SELECT $2, indicator, value, unit, time, source, $1 FROM src
			ON CONFLICT (account_id, indicator, time, source) DO UPDATE
			SET value = excluded.value, unit = excluded.unit, import_id = excluded.import_id
			RETURNING xmax = 0 AS inserted)
		SELECT count(*), count(*) FILTER (WHERE inserted) FROM up`
	upsertGenetic = `WITH src AS (
			SELECT DISTINCT ON (rsid) rsid, chromosome, position, genotype
			FROM import_genetic WHERE import_id = $1 ORDER BY rsid, line DESC),
		up AS (INSERT INTO genetic_variants (account_id, rsid, chromosome, position, genotype, import_id)
			SELECT $2, rsid, chromosome, position, genotype, $1 FROM src
			ON CONFLICT (account_id, rsid) DO UPDATE
			SET chromosome = excluded.chromosome, position = excluded.position, genotype = excluded.genotype,
				import_id = excluded.import_id
			RETURNING xmax = 0 AS inserted)
		SELECT count(*), count(*) FILTER (WHERE inserted) FROM up`
)

func (s *Service) importCommit(ctx context.Context, req *userdata.ImportCommitRequest) (*userdata.ImportResult, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("beginning transaction: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	imp, err := lockImport(ctx, tx, req.AccountID, req.ImportID)
	if wire.CodeOf(err) == wire.NotFound {
		return s.importResult(ctx, req, err)
	}
	if err != nil {
		return nil, err
	}
	res := &userdata.ImportResult{Kind: imp.kind, Valid: imp.valid, ErrorCount: imp.nerrs}
	if imp.nerrs == 0 || req.Partial {
		q := upsertHealth
		if imp.kind == userdata.KindGenetic {
			q = upsertGenetic
		}
		// The dedupe sort of a whole raw file (600,000 rows) fits in
		// memory with this, instead of spilling to disk.
		if _, err := tx.Exec(ctx, "SET LOCAL work_mem = '64MB'"); err != nil {
			return nil, fmt.Errorf("sizing import sort: %w", err)
		}
		if err := tx.QueryRow(ctx, q, req.ImportID, req.AccountID).Scan(&res.Written, &res.Inserted); err != nil {
			return nil, fmt.Errorf("storing import: %w", err)
		}
		res.Committed = true
		if _, err := tx.Exec(ctx, `INSERT INTO data_import_log (id, account_id, kind, format, written) VALUES ($1, $2, $3, $4, $5)`,
			req.ImportID, req.AccountID, imp.kind, imp.format, res.Written); err != nil {
			return nil, fmt.Errorf("logging import: %w", err)
		}
	}
	if err := dropImport(ctx, tx, req.ImportID); err != nil {
		return nil, err
	}
	stored, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("encoding import result: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO data_import_results (id, account_id, result) VALUES ($1, $2, $3)`,
		req.ImportID, req.AccountID, stored); err != nil {
		return nil, fmt.Errorf("keeping import result: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("committing import: %w", err)
	}
	if res.Committed {
		s.announce(ctx, req.AccountID, imp.kind)
	}
	return res, nil
}

// importResult answers a commit of an import that is no longer open: with
// the kept result when it was committed (its first answer was lost), else
// with notOpen.
func (s *Service) importResult(ctx context.Context, req *userdata.ImportCommitRequest, notOpen error) (*userdata.ImportResult, error) {
	var stored []byte
	err := s.pool.QueryRow(ctx, `SELECT result FROM data_import_results WHERE id = $1 AND account_id = $2`,
		req.ImportID, req.AccountID).Scan(&stored)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notOpen
	}
	if err != nil {
		return nil, fmt.Errorf("reading import result: %w", err)
	}
	var res userdata.ImportResult
	if err := json.Unmarshal(stored, &res); err != nil {
		return nil, fmt.Errorf("decoding import result: %w", err)
	}
	return &res, nil
}

func (s *Service) importAbort(ctx context.Context, req *userdata.ImportAbortRequest) (*wire.Empty, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("beginning transaction: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := lockImport(ctx, tx, req.AccountID, req.ImportID); err != nil {
		return nil, err
	}
	if err := dropImport(ctx, tx, req.ImportID); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("committing abort: %w", err)
	}
	return &wire.Empty{}, nil
}

// announce publishes events.data.changed.<account>; a failure is logged,
// since the data change itself has happened.
func (s *Service) announce(ctx context.Context, account string, kinds ...string) {
	ev := &userdata.DataChangedEvent{AccountID: account, Kinds: kinds}
	if err := userdata.DataChanged.For(account).Publish(ctx, s.node.Client, ev); err != nil {
		s.log.WarnContext(ctx, "publishing data change failed", "account_id", account, "err", err)
	}
}
