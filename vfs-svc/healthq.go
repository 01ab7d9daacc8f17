package vfssvc

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mirobody/mirobody-go/services/vfs/userdata"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Health query limits, per indicator.
const (
	defaultHealthLimit = 100
	maxHealthLimit     = 10000
)

// filter builds a WHERE clause from fixed fragments; values only ever
// travel as parameters.
type filter struct {
	where []string
	args  []any
}

func (f *filter) add(fragment string, arg any) {
	f.args = append(f.args, arg)
	f.where = append(f.where, strings.ReplaceAll(fragment, "$?", "$"+strconv.Itoa(len(f.args))))
}

func (f *filter) sql() string { return strings.Join(f.where, " AND ") }

// next returns the placeholder for one more argument.
func (f *filter) next(arg any) string {
	f.args = append(f.args, arg)
	return "$" + strconv.Itoa(len(f.args))
}

// healthFilter selects an account's rows of some indicators (matched
// case-insensitively) in a time range.
func healthFilter(account string, indicators []string, start, end *time.Time) (*filter, error) {
	if err := checkAccount(account); err != nil {
		return nil, err
	}
	if start != nil && end != nil && end.Before(*start) {
		return nil, wire.Errorf(wire.InvalidArgument, "end is before start")
	}
	f := &filter{}
	f.add("account_id = $?", account)
	if len(indicators) > 0 {
		lower := make([]string, len(indicators))
		for i, n := range indicators {
			lower[i] = strings.ToLower(strings.TrimSpace(n))
		}
		f.add("lower(indicator) = ANY($?)", lower)
	}
	if start != nil {
		f.add("time >= $?", *start)
	}
	if end != nil {
		f.add("time <= $?", *end)
	}
	return f, nil
}

func (s *Service) queryHealth(ctx context.Context, req *userdata.HealthQueryRequest) (*userdata.HealthQueryResponse, error) {
	f, err := healthFilter(req.AccountID, req.Indicators, req.Start, req.End)
	if err != nil {
		return nil, err
	}
	limit := req.Limit
	if limit <= 0 {
		limit = defaultHealthLimit
	}
	limit = min(limit, maxHealthLimit)
	resp := &userdata.HealthQueryResponse{}
	switch req.Mode {
	case userdata.HealthCatalog, "":
		rows, err := s.pool.Query(ctx, `SELECT indicator, (array_agg(unit ORDER BY time DESC))[1], count(*), min(time), max(time)
			FROM health_series WHERE `+f.sql()+` GROUP BY indicator ORDER BY indicator`, f.args...)
		if err != nil {
			return nil, fmt.Errorf("reading health catalog: %w", err)
		}
		resp.Catalog, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (userdata.HealthCatalogEntry, error) {
			var e userdata.HealthCatalogEntry
			err := r.Scan(&e.Indicator, &e.Unit, &e.Count, &e.First, &e.Last)
			e.First, e.Last = e.First.UTC(), e.Last.UTC()
			return e, err
		})
		if err != nil {
			return nil, fmt.Errorf("reading health catalog: %w", err)
		}
	case userdata.HealthRows:
		lim := f.next(limit)
		resp.Rows, err = s.healthRows(ctx, `SELECT indicator, value, unit, time, source FROM (
				SELECT indicator, value, unit, time, source,
					row_number() OVER (PARTITION BY indicator ORDER BY time DESC, source) AS rn
				FROM health_series WHERE `+f.sql()+`) r
			WHERE rn <= `+lim+` ORDER BY indicator, time, source`, f.args)
	case userdata.HealthLatest:
		resp.Rows, err = s.healthRows(ctx, `SELECT DISTINCT ON (indicator) indicator, value, unit, time, source
			FROM health_series WHERE `+f.sql()+` ORDER BY indicator, time DESC, source`, f.args)
	case userdata.HealthStats:
		resp.Stats, err = s.healthStats(ctx, f, req.Bucket, limit)
	default:
		return nil, wire.Errorf(wire.InvalidArgument, "mode %q: want catalog, rows, stats or latest", req.Mode)
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}

func (s *Service) healthRows(ctx context.Context, sql string, args []any) ([]userdata.HealthRow, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("reading health rows: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (userdata.HealthRow, error) {
		var h userdata.HealthRow
		err := r.Scan(&h.Indicator, &h.Value, &h.Unit, &h.Time, &h.Source)
		h.Time = h.Time.UTC()
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading health rows: %w", err)
	}
	return out, nil
}

// healthStats aggregates per indicator, unit and bucket (UTC calendar
// buckets), keeping the most recent limit buckets of each indicator.
func (s *Service) healthStats(ctx context.Context, f *filter, bucket string, limit int) ([]userdata.HealthStat, error) {
	bexpr := "NULL::timestamptz"
	switch bucket {
	case "", userdata.BucketNone:
	case userdata.BucketDay, userdata.BucketWeek, userdata.BucketMonth:
		bexpr = "date_trunc(" + f.next(bucket) + "::text, time, 'UTC')"
	default:
		return nil, wire.Errorf(wire.InvalidArgument, "bucket %q: want none, day, week or month", bucket)
	}
	lim := f.next(limit)
	rows, err := s.pool.Query(ctx, `SELECT indicator, unit, b, n, lo, hi, mean, first, last FROM (
			SELECT indicator, unit, b, count(*) AS n, min(value) AS lo, max(value) AS hi, avg(value) AS mean,
				min(time) AS first, max(time) AS last,
				row_number() OVER (PARTITION BY indicator ORDER BY b DESC NULLS LAST, unit) AS rn
			FROM (SELECT indicator, unit, value, time, `+bexpr+` AS b FROM health_series WHERE `+f.sql()+`) x
			GROUP BY indicator, unit, b) g
		WHERE rn <= `+lim+` ORDER BY indicator, b NULLS FIRST, unit`, f.args...)
	if err != nil {
		return nil, fmt.Errorf("reading health stats: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (userdata.HealthStat, error) {
		var st userdata.HealthStat
		err := r.Scan(&st.Indicator, &st.Unit, &st.Bucket, &st.Count, &st.Min, &st.Max, &st.Avg, &st.First, &st.Last)
		if st.Bucket != nil {
			b := st.Bucket.UTC()
			st.Bucket = &b
		}
		st.First, st.Last = st.First.UTC(), st.Last.UTC()
		return st, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading health stats: %w", err)
	}
	return out, nil
}

func (s *Service) deleteHealth(ctx context.Context, req *userdata.HealthDeleteRequest) (*userdata.DataDeleteResponse, error) {
	f, err := healthFilter(req.AccountID, req.Indicators, req.Start, req.End)
	if err != nil {
		return nil, err
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM health_series WHERE `+f.sql(), f.args...)
	if err != nil {
		return nil, fmt.Errorf("deleting health rows: %w", err)
	}
	s.announce(ctx, req.AccountID, userdata.KindHealth)
	return &userdata.DataDeleteResponse{Deleted: tag.RowsAffected()}, nil
}
