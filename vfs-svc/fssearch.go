package vfssvc

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/jackc/pgx/v5"

	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Result limits of glob and grep.
const (
	maxGlob          = 1000
	defaultGrepLimit = 500
	maxGrep          = 5000
	// maxGrepLine bounds one returned line, in characters.
	maxGrepLine = 1000
)

// globBase returns the longest leading run of segments of an absolute
// pattern that holds no glob syntax: only files below it can match.
func globBase(pattern string) string {
	segs := strings.Split(pattern, "/")
	base := "/"
	for _, seg := range segs[1 : len(segs)-1] {
		if strings.ContainsAny(seg, `*?[]{}\`) {
			break
		}
		base = path.Join(base, seg)
	}
	return base
}

func (s *Service) glob(ctx context.Context, req *files.GlobRequest) (*files.GlobResponse, error) {
	dir := req.Path
	if dir == "" {
		dir = "/"
	}
	pattern := req.Pattern
	if !strings.HasPrefix(pattern, "/") {
		pattern = strings.TrimSuffix(dir, "/") + "/" + pattern
	}
	pattern, err := cleanPath(pattern)
	if err != nil {
		return nil, err
	}
	if !doublestar.ValidatePattern(pattern) {
		return nil, wire.Errorf(wire.InvalidArgument, "glob pattern %q is malformed", req.Pattern)
	}
	l, err := resolve(req.Scope, globBase(pattern))
	if err != nil {
		return nil, err
	}
	limit := req.Limit
	if limit <= 0 || limit > maxGlob {
		limit = maxGlob
	}
	resp := &files.GlobResponse{Files: []files.FileInfo{}}
	add := func(fi files.FileInfo) bool {
		if !doublestar.MatchUnvalidated(pattern, fi.Path) {
			return true
		}
		if len(resp.Files) == limit {
			resp.Truncated = true
			return false
		}
		resp.Files = append(resp.Files, fi)
		return true
	}
	if l.kind != locMount {
		lo, hi := l.prefix()
		// Only paths travel, never contents; the pattern itself is matched
		// here, since no index answers a glob.
		rows, err := s.pool.Query(ctx, `SELECT path, size, version, modified FROM vfs_files
			WHERE account_id = $1 AND session_id = ANY($2) AND ((path >= $3 AND path < $4) OR path = $5)
			ORDER BY path`, l.account, l.sessions, lo, hi, l.path)
		if err != nil {
			return nil, fmt.Errorf("globbing: %w", err)
		}
		var p string
		var f file
		_, err = pgx.ForEachRow(rows, []any{&p, &f.size, &f.version, &f.modified}, func() error {
			if !add(*f.info(p)) {
				return errStop
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			return nil, fmt.Errorf("globbing: %w", err)
		}
	}
	if l.kind == locMount || l.kind == locRoot {
		err := s.mount.walk(l.path, func(fi files.FileInfo, _ func() (string, error)) error {
			if !add(fi) {
				return errStop
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			return nil, err
		}
	}
	sort.Slice(resp.Files, func(i, j int) bool { return resp.Files[i].Path < resp.Files[j].Path })
	return resp, nil
}

// errStop ends a walk early.
var errStop = errors.New("stop")

func (s *Service) grep(ctx context.Context, req *files.GrepRequest) (*files.GrepResponse, error) {
	dir := req.Path
	if dir == "" {
		dir = "/"
	}
	l, err := resolve(req.Scope, dir)
	if err != nil {
		return nil, err
	}
	mode := req.Mode
	if mode == "" {
		mode = files.GrepFilesWithMatches
	}
	if mode != files.GrepFilesWithMatches && mode != files.GrepContent && mode != files.GrepCount {
		return nil, wire.Errorf(wire.InvalidArgument, "grep mode %q: want files_with_matches, content or count", req.Mode)
	}
	limit := req.Limit
	if limit <= 0 {
		limit = defaultGrepLimit
	}
	limit = min(limit, maxGrep)
	pat, err := compileGrep(req.Pattern, req.Literal, req.IgnoreCase)
	if err != nil {
		return nil, err
	}
	var matches []files.GrepMatch
	if l.kind != locMount {
		if matches, err = s.grepDB(ctx, l, pat, mode, limit+1); err != nil {
			return nil, err
		}
	}
	if l.kind == locMount || l.kind == locRoot {
		more, err := s.grepMount(l.path, pat, mode, limit+1-len(matches))
		if err != nil {
			return nil, err
		}
		matches = append(matches, more...)
	}
	sort.Slice(matches, func(i, j int) bool {
		if matches[i].Path != matches[j].Path {
			return matches[i].Path < matches[j].Path
		}
		return matches[i].Line < matches[j].Line
	})
	resp := &files.GrepResponse{}
	if len(matches) > limit {
		matches, resp.Truncated = matches[:limit], true
	}
	if mode == files.GrepFilesWithMatches {
		resp.Files = make([]string, len(matches))
		for i, m := range matches {
			resp.Files[i] = m.Path
		}
		return resp, nil
	}
	resp.Matches = matches
	return resp, nil
}

// grepDB runs the search inside Postgres: the trigram index picks the
// candidate files, the regular expression confirms them, and in content
// and count modes the file is split into lines there too. Contents never
// leave the database, only matching lines do. There is no ORDER BY: a
// pattern that matches most files would otherwise regex-check every one
// of them just to sort; the scan stops at the limit instead, and the
// caller sorts what it got (a truncated result is then some matches, not
// the first ones by path).
func (s *Service) grepDB(ctx context.Context, l loc, pat *grepPattern, mode string, limit int) ([]files.GrepMatch, error) {
	lo, hi := l.prefix()
	const where = `f.account_id = $1 AND f.session_id = ANY($2)
		AND ((f.path >= $3 AND f.path < $4) OR f.path = $5) AND f.content ~ $6`
	args := []any{l.account, l.sessions, lo, hi, l.path, pat.are, limit}
	var sql string
	switch mode {
	case files.GrepFilesWithMatches:
		sql = `SELECT f.path, 0::bigint, '', 0::bigint FROM vfs_files f WHERE ` + where + ` LIMIT $7`
	case files.GrepContent:
		sql = `SELECT f.path, l.n, left(l.line, $8), 0::bigint FROM vfs_files f,
			LATERAL regexp_split_to_table(f.content, E'\n') WITH ORDINALITY AS l(line, n)
			WHERE ` + where + ` AND l.line ~ $6 LIMIT $7`
		args = append(args, maxGrepLine)
	case files.GrepCount:
		sql = `SELECT f.path, 0::bigint, '', (SELECT count(*) FROM regexp_split_to_table(f.content, E'\n') AS l(line)
			WHERE l.line ~ $6) FROM vfs_files f WHERE ` + where + ` LIMIT $7`
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("grep: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (files.GrepMatch, error) {
		var m files.GrepMatch
		return m, row.Scan(&m.Path, &m.Line, &m.Text, &m.Count)
	})
	if err != nil {
		return nil, fmt.Errorf("grep: %w", err)
	}
	return out, nil
}

// grepMount searches the read-only mount in Go: it is a few small files
// on local disk.
func (s *Service) grepMount(p string, pat *grepPattern, mode string, limit int) ([]files.GrepMatch, error) {
	var out []files.GrepMatch
	err := s.mount.walk(p, func(fi files.FileInfo, open func() (string, error)) error {
		content, err := open()
		if err != nil {
			return nil
		}
		var count int64
		for i, line := range strings.Split(content, "\n") {
			if !pat.re2.MatchString(line) {
				continue
			}
			count++
			if mode == files.GrepContent {
				if len(out) == limit {
					return errStop
				}
				out = append(out, files.GrepMatch{Path: fi.Path, Line: int64(i + 1), Text: truncateRunes(line, maxGrepLine)})
			}
		}
		if count > 0 && mode != files.GrepContent {
			if len(out) == limit {
				return errStop
			}
			m := files.GrepMatch{Path: fi.Path}
			if mode == files.GrepCount {
				m.Count = count
			}
			out = append(out, m)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	return out, nil
}

func truncateRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
