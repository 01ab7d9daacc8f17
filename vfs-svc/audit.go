package vfssvc

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/vfs/audit"
	"github.com/mirobody/mirobody-go/services/wire"
)

// The tool-call audit log (vfs-svc/design.md "Audit log"): batches
// registry-svc publishes are stored by one replica (a queue group), read
// back per account or by the operator, and deleted after
// AUDIT_RETENTION_DAYS.

// auditQueue is the queue group of the audit subscription.
const auditQueue = "vfs-audit"

// auditPruneEvery is how often old records are deleted.
const auditPruneEvery = time.Hour

// maxAuditKeys bounds the argument names kept per record.
const maxAuditKeys = 64

func (s *Service) registerAudit(svc *wire.Service) error {
	if err := wire.Serve(svc, audit.Query, s.queryAudit); err != nil {
		return err
	}
	// The subscription ends with the connection when the node stops.
	_, err := s.node.Conn.QueueSubscribe(audit.Recorded.Subject, auditQueue, func(m *nats.Msg) {
		b, err := audit.Recorded.Decode(m)
		if err != nil {
			s.log.Warn("dropping an audit batch", "err", err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.storeAudit(ctx, b.Records); err != nil {
			s.log.Warn("storing an audit batch", "err", err, "records", len(b.Records))
		}
	})
	if err != nil {
		return fmt.Errorf("subscribing to %s: %w", audit.Recorded.Subject, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stopPrune, s.pruned = cancel, make(chan struct{})
	go s.pruneAudit(ctx)
	return s.node.Conn.Flush()
}

// storeAudit inserts records in one round trip.
func (s *Service) storeAudit(ctx context.Context, recs []audit.Record) error {
	b := &pgx.Batch{}
	for _, r := range recs {
		keys := r.ArgumentKeys
		if len(keys) > maxAuditKeys {
			keys = keys[:maxAuditKeys]
		}
		if keys == nil {
			keys = []string{}
		}
		b.Queue(`INSERT INTO audit_log (at, account_id, caller_kind, agent, tool, outcome, duration_ms, argument_bytes, result_bytes, argument_keys)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			r.Time, r.AccountID, r.CallerKind, r.Agent, r.Tool, r.Outcome, r.DurationMS, r.ArgumentBytes, r.ResultBytes, keys)
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("storing audit records: %w", err)
	}
	return nil
}

func (s *Service) queryAudit(ctx context.Context, req *audit.QueryRequest) (*audit.QueryResponse, error) {
	limit := req.Limit
	switch {
	case limit == 0:
		limit = 50
	case limit < 0 || limit > audit.MaxLimit:
		return nil, wire.Errorf(wire.InvalidArgument, "limit must be 1 to %d", audit.MaxLimit)
	}
	if !req.All && req.AccountID == "" {
		return nil, wire.Errorf(wire.InvalidArgument, "account_id is required")
	}
	before := req.Before
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := s.pool.Query(ctx, `SELECT id, at, account_id, caller_kind, agent, tool, outcome, duration_ms, argument_bytes, result_bytes, argument_keys
		FROM audit_log WHERE ($1 OR account_id = $2) AND id < $3 ORDER BY id DESC LIMIT $4`,
		req.All, req.AccountID, before, limit)
	if err != nil {
		return nil, fmt.Errorf("querying the audit log: %w", err)
	}
	recs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (audit.Record, error) {
		var v audit.Record
		err := r.Scan(&v.ID, &v.Time, &v.AccountID, &v.CallerKind, &v.Agent, &v.Tool, &v.Outcome, &v.DurationMS,
			&v.ArgumentBytes, &v.ResultBytes, &v.ArgumentKeys)
		return v, err
	})
	if err != nil {
		return nil, fmt.Errorf("querying the audit log: %w", err)
	}
	return &audit.QueryResponse{Records: recs}, nil
}

// pruneAudit deletes records older than the retention now and every
// auditPruneEvery until ctx ends. Every replica prunes; the deletes are
// idempotent, so no leader is needed.
func (s *Service) pruneAudit(ctx context.Context) {
	defer close(s.pruned)
	t := time.NewTicker(auditPruneEvery)
	defer t.Stop()
	for {
		if err := s.deleteOldAudit(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("pruning the audit log", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// deleteOldAudit deletes the records older than AUDIT_RETENTION_DAYS.
func (s *Service) deleteOldAudit(ctx context.Context) error {
	days := s.opts.Config.AuditRetentionDays
	if _, err := s.pool.Exec(ctx, `DELETE FROM audit_log WHERE at < now() - make_interval(days => $1)`, days); err != nil {
		return fmt.Errorf("deleting audit records older than %d days: %w", days, err)
	}
	return nil
}
