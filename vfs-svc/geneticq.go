package vfssvc

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/mirobody/mirobody-go/services/vfs/userdata"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Genetic query limits.
const (
	defaultGeneticLimit = 100
	maxGeneticLimit     = 1000
	defaultNearbyRange  = 1_000_000
	maxNearbyRange      = 50_000_000
	defaultNearbyLimit  = 10
	maxNearbyLimit      = 100
	maxQueryRSIDs       = 1000
)

// chromOrder sorts chromosomes naturally: 1..22, then X, XY, Y, MT by name.
const chromOrder = `CASE WHEN %[1]s ~ '^[0-9]+$' THEN %[1]s::int ELSE 100 END, %[1]s`

// geneticFilter builds the hit filter of a query or a delete.
func geneticFilter(req *userdata.GeneticQueryRequest) (*filter, error) {
	if err := checkAccount(req.AccountID); err != nil {
		return nil, err
	}
	f := &filter{}
	f.add("account_id = $?", req.AccountID)
	if len(req.RSIDs) > maxQueryRSIDs {
		return nil, wire.Errorf(wire.InvalidArgument, "at most %d rsids per query", maxQueryRSIDs)
	}
	if ids := rsidForms(req.RSIDs); len(ids) > 0 {
		f.add("rsid = ANY($?)", ids)
	}
	if req.Chromosome != "" {
		c, ok := chromosomes[strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(req.Chromosome)), "CHR")]
		if !ok {
			return nil, wire.Errorf(wire.InvalidArgument, "chromosome %q is not 1-22, X, Y, XY or MT", req.Chromosome)
		}
		f.add("chromosome = $?", c)
	}
	if req.Position != nil {
		if req.Chromosome == "" {
			return nil, wire.Errorf(wire.InvalidArgument, "position needs a chromosome")
		}
		f.add("position = $?", *req.Position)
	}
	if g := strings.ToUpper(strings.TrimSpace(req.Genotype)); g != "" {
		f.add("genotype = ANY($?)", []string{g, reverse(g)})
	}
	return f, nil
}

// rsidForms returns the trimmed rsids plus their lower-case forms, since
// raw files write "rs123" and people write "RS123".
func rsidForms(ids []string) []string {
	var out []string
	for _, id := range ids {
		if id = strings.TrimSpace(id); id != "" {
			out = append(out, id)
			if l := strings.ToLower(id); l != id {
				out = append(out, l)
			}
		}
	}
	return out
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// queryGenetic finds the hits and their neighbours in one statement: a
// LATERAL join runs the nearby search per hit inside Postgres over the
// (account, chromosome, position) index, so there is no query per row.
func (s *Service) queryGenetic(ctx context.Context, req *userdata.GeneticQueryRequest) (*userdata.GeneticQueryResponse, error) {
	if len(req.RSIDs) == 0 && req.Chromosome == "" {
		return nil, wire.Errorf(wire.InvalidArgument, "give rsids or a chromosome")
	}
	f, err := geneticFilter(req)
	if err != nil {
		return nil, err
	}
	limit, offset := req.Limit, max(req.Offset, 0)
	if limit <= 0 {
		limit = defaultGeneticLimit
	}
	limit = min(limit, maxGeneticLimit)
	rng := req.NearbyRange
	if rng <= 0 {
		rng = defaultNearbyRange
	}
	rng = min(rng, maxNearbyRange)
	nlim := 0
	if req.IncludeNearby {
		nlim = req.NearbyLimit
		if nlim <= 0 {
			nlim = defaultNearbyLimit
		}
		nlim = min(nlim, maxNearbyLimit)
	}
	where := f.sql()
	pLim, pOff, pRng, pNlim := f.next(limit), f.next(offset), f.next(rng), f.next(nlim)
	sql := `WITH hits AS (
			SELECT rsid, chromosome, position, genotype, count(*) OVER () AS total
			FROM genetic_variants WHERE ` + where + `
			ORDER BY ` + fmt.Sprintf(chromOrder, "chromosome") + `, position, rsid
			LIMIT ` + pLim + ` OFFSET ` + pOff + `)
		SELECT h.rsid, h.chromosome, h.position, h.genotype, h.total, n.rsid, n.position, n.genotype, n.distance
		FROM hits h LEFT JOIN LATERAL (
			SELECT v.rsid, v.position, v.genotype, abs(v.position - h.position) AS distance
			FROM genetic_variants v
			WHERE v.account_id = $1 AND v.chromosome = h.chromosome AND v.rsid <> h.rsid
				AND v.position BETWEEN h.position - ` + pRng + ` AND h.position + ` + pRng + `
			ORDER BY abs(v.position - h.position), v.position, v.rsid
			LIMIT ` + pNlim + `) n ON true
		ORDER BY ` + fmt.Sprintf(chromOrder, "h.chromosome") + `, h.position, h.rsid, n.distance, n.position, n.rsid`
	rows, err := s.pool.Query(ctx, sql, f.args...)
	if err != nil {
		return nil, fmt.Errorf("querying variants: %w", err)
	}
	resp := &userdata.GeneticQueryResponse{Hits: []userdata.GeneticHit{}}
	var h userdata.Variant
	var nRSID, nGenotype *string
	var nPos, nDist *int64
	_, err = pgx.ForEachRow(rows, []any{&h.RSID, &h.Chromosome, &h.Position, &h.Genotype, &resp.Total, &nRSID, &nPos, &nGenotype, &nDist}, func() error {
		if k := len(resp.Hits); k == 0 || resp.Hits[k-1].RSID != h.RSID {
			resp.Hits = append(resp.Hits, userdata.GeneticHit{Variant: h})
		}
		if nRSID != nil {
			last := &resp.Hits[len(resp.Hits)-1]
			last.Nearby = append(last.Nearby, userdata.NearbyVariant{
				Variant:  userdata.Variant{RSID: *nRSID, Chromosome: h.Chromosome, Position: *nPos, Genotype: *nGenotype},
				Distance: *nDist})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("querying variants: %w", err)
	}
	if resp.Missing, err = s.missingRSIDs(ctx, req.AccountID, req.RSIDs); err != nil {
		return nil, err
	}
	return resp, nil
}

// missingRSIDs returns the requested rsids the account has no variant for,
// in one query.
func (s *Service) missingRSIDs(ctx context.Context, account string, ids []string) ([]string, error) {
	var want []string
	for _, id := range ids {
		if id = strings.TrimSpace(id); id != "" {
			want = append(want, id)
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT r FROM unnest($2::text[]) WITH ORDINALITY AS u(r, i)
		WHERE NOT EXISTS (SELECT 1 FROM genetic_variants WHERE account_id = $1 AND rsid IN (u.r, lower(u.r)))
		ORDER BY i`, account, want)
	if err != nil {
		return nil, fmt.Errorf("probing rsids: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("probing rsids: %w", err)
	}
	return out, nil
}

func (s *Service) deleteGenetic(ctx context.Context, req *userdata.GeneticDeleteRequest) (*userdata.DataDeleteResponse, error) {
	f, err := geneticFilter(&userdata.GeneticQueryRequest{AccountID: req.AccountID, RSIDs: req.RSIDs})
	if err != nil {
		return nil, err
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM genetic_variants WHERE `+f.sql(), f.args...)
	if err != nil {
		return nil, fmt.Errorf("deleting variants: %w", err)
	}
	s.announce(ctx, req.AccountID, userdata.KindGenetic)
	return &userdata.DataDeleteResponse{Deleted: tag.RowsAffected()}, nil
}
