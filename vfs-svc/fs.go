package vfssvc

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/wire"
)

// querier is what both a pool and a transaction offer.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func (s *Service) registerFS(svc *wire.Service) error {
	return errors.Join(
		wire.Serve(svc, files.Stat, s.stat),
		wire.Serve(svc, files.Ls, s.ls),
		wire.Serve(svc, files.Read, s.read),
		wire.Serve(svc, files.Write, s.write),
		wire.Serve(svc, files.Edit, s.edit),
		wire.Serve(svc, files.Glob, s.glob),
		wire.Serve(svc, files.Grep, s.grep),
		wire.Serve(svc, files.Delete, s.delete),
		wire.Serve(svc, files.Move, s.move),
	)
}

// file is one stored file's metadata.
type file struct {
	size     int64
	version  int64
	modified time.Time
}

func (f *file) info(p string) *files.FileInfo {
	mod := f.modified.UTC()
	return &files.FileInfo{Path: p, Size: f.size, Version: f.version, Modified: &mod}
}

// lookup returns the file at l (nil if none) and whether l is a directory,
// that is whether any file lies below it.
func lookup(ctx context.Context, q querier, l loc) (*file, bool, error) {
	var f file
	err := q.QueryRow(ctx, `SELECT size, version, modified FROM vfs_files
		WHERE account_id = $1 AND session_id = ANY($2) AND path = $3`,
		l.account, l.sessions, l.path).Scan(&f.size, &f.version, &f.modified)
	switch {
	case err == nil:
		return &f, false, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return nil, false, fmt.Errorf("reading file: %w", err)
	}
	if l.kind == locRoot || l.path+"/" == files.MemoriesRoot {
		return nil, true, nil
	}
	lo, hi := l.prefix()
	var dir bool
	err = q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM vfs_files
		WHERE account_id = $1 AND session_id = ANY($2) AND path >= $3 AND path < $4)`,
		l.account, l.sessions, lo, hi).Scan(&dir)
	if err != nil {
		return nil, false, fmt.Errorf("probing directory: %w", err)
	}
	return nil, dir, nil
}

func (s *Service) stat(ctx context.Context, req *files.StatRequest) (*files.FileInfo, error) {
	l, err := resolve(req.Scope, req.Path)
	if err != nil {
		return nil, err
	}
	if l.kind == locMount {
		return s.mount.stat(l.path)
	}
	f, dir, err := lookup(ctx, s.pool, l)
	switch {
	case err != nil:
		return nil, err
	case f != nil:
		return f.info(l.path), nil
	case dir:
		return &files.FileInfo{Path: l.path, IsDir: true}, nil
	}
	return nil, wire.Errorf(wire.NotFound, "%s does not exist", l.path)
}

func (s *Service) ls(ctx context.Context, req *files.LsRequest) (*files.LsResponse, error) {
	l, err := resolve(req.Scope, req.Path)
	if err != nil {
		return nil, err
	}
	if l.kind == locMount {
		entries, err := s.mount.ls(l.path)
		if err != nil {
			return nil, err
		}
		return &files.LsResponse{Entries: entries}, nil
	}
	lo, hi := l.prefix()
	// substr counts characters, so the offset is the prefix's rune count.
	rows, err := s.pool.Query(ctx, `SELECT name, bool_and(is_dir),
			coalesce(max(size) FILTER (WHERE NOT is_dir), 0),
			coalesce(max(version) FILTER (WHERE NOT is_dir), 0), max(modified)
		FROM (SELECT split_part(rest, '/', 1) AS name, strpos(rest, '/') > 0 AS is_dir, size, version, modified
			FROM (SELECT substr(path, $5) AS rest, size, version, modified FROM vfs_files
				WHERE account_id = $1 AND session_id = ANY($2) AND path >= $3 AND path < $4) r) c
		GROUP BY name ORDER BY name`, l.account, l.sessions, lo, hi, utf8.RuneCountInString(lo)+1)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", l.path, err)
	}
	entries, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (files.FileInfo, error) {
		var name string
		var fi files.FileInfo
		var mod time.Time
		err := row.Scan(&name, &fi.IsDir, &fi.Size, &fi.Version, &mod)
		fi.Path = path.Join(l.path, name)
		if !fi.IsDir {
			mod = mod.UTC()
			fi.Modified = &mod
		}
		return fi, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", l.path, err)
	}
	if l.kind == locRoot {
		entries = s.rootEntries(entries)
	}
	if len(entries) == 0 && l.kind != locRoot && l.path+"/" != files.MemoriesRoot {
		return nil, s.missingDir(ctx, l)
	}
	if entries == nil {
		entries = []files.FileInfo{}
	}
	return &files.LsResponse{Entries: entries}, nil
}

// missingDir explains why a listing found nothing: the path is a file, or
// does not exist.
func (s *Service) missingDir(ctx context.Context, l loc) error {
	f, _, err := lookup(ctx, s.pool, l)
	if err != nil {
		return err
	}
	if f != nil {
		return wire.Errorf(wire.NotDir, "%s is not a directory", l.path)
	}
	return wire.Errorf(wire.NotFound, "%s does not exist", l.path)
}

// rootEntries adds the well-known roots to a listing of "/".
func (s *Service) rootEntries(entries []files.FileInfo) []files.FileInfo {
	want := []files.FileInfo{{Path: strings.TrimSuffix(files.MemoriesRoot, "/"), IsDir: true}}
	if len(s.mount.dirs) > 0 {
		want = append(want, files.FileInfo{Path: strings.TrimSuffix(files.SkillsRoot, "/"), IsDir: true, ReadOnly: true})
	}
	for _, w := range want {
		found := false
		for _, e := range entries {
			found = found || e.Path == w.Path
		}
		if !found {
			entries = append(entries, w)
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	return entries
}

func (s *Service) read(ctx context.Context, req *files.ReadRequest) (*files.ReadResponse, error) {
	l, err := resolve(req.Scope, req.Path)
	if err != nil {
		return nil, err
	}
	if req.Offset < 0 || req.Limit < 0 {
		return nil, wire.Errorf(wire.InvalidArgument, "offset and limit must not be negative")
	}
	var content string
	var info *files.FileInfo
	if l.kind == locMount {
		if content, info, err = s.mount.read(l.path); err != nil {
			return nil, err
		}
	} else {
		var f file
		err := s.pool.QueryRow(ctx, `SELECT content, size, version, modified FROM vfs_files
			WHERE account_id = $1 AND session_id = ANY($2) AND path = $3`,
			l.account, l.sessions, l.path).Scan(&content, &f.size, &f.version, &f.modified)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, notAFile(ctx, s.pool, l)
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", l.path, err)
		}
		info = f.info(l.path)
	}
	if req.Bytes {
		return sliceBytes(content, info, req.Offset, req.Limit), nil
	}
	return sliceLines(content, info, req.Offset, req.Limit), nil
}

// notAFile explains why a file is missing: it is a directory, or absent.
func notAFile(ctx context.Context, q querier, l loc) error {
	_, dir, err := lookup(ctx, q, l)
	if err != nil {
		return err
	}
	if dir {
		return wire.Errorf(wire.IsDir, "%s is a directory", l.path)
	}
	return wire.Errorf(wire.NotFound, "%s does not exist", l.path)
}

// sliceLines returns limit lines from line offset (0-based), raw, keeping
// their newlines, and stops early rather than exceed MaxReadBytes.
func sliceLines(content string, info *files.FileInfo, offset, limit int64) *files.ReadResponse {
	if limit == 0 {
		limit = files.DefaultReadLines
	}
	total := int64(strings.Count(content, "\n"))
	if content != "" && !strings.HasSuffix(content, "\n") {
		total++
	}
	resp := &files.ReadResponse{FileInfo: *info, StartLine: offset + 1, TotalLines: total}
	rest := content
	for i := int64(0); i < offset && rest != ""; i++ {
		_, rest, _ = strings.Cut(rest, "\n")
	}
	var b strings.Builder
	for n := int64(0); n < limit && rest != ""; n++ {
		line, tail, found := strings.Cut(rest, "\n")
		if b.Len()+len(line)+1 > files.MaxReadBytes {
			resp.Truncated = true
			break
		}
		b.WriteString(line)
		if found {
			b.WriteByte('\n')
		}
		rest = tail
	}
	resp.Content = b.String()
	resp.Truncated = resp.Truncated || offset+limit < total
	return resp
}

// sliceBytes returns up to limit bytes from offset, moved to character
// boundaries so the text stays valid UTF-8.
func sliceBytes(content string, info *files.FileInfo, offset, limit int64) *files.ReadResponse {
	if limit == 0 || limit > files.MaxReadBytes {
		limit = files.MaxReadBytes
	}
	start := min(offset, int64(len(content)))
	for start < int64(len(content)) && !utf8.RuneStart(content[start]) {
		start++
	}
	end := min(start+limit, int64(len(content)))
	for end < int64(len(content)) && end > start && !utf8.RuneStart(content[end]) {
		end--
	}
	return &files.ReadResponse{FileInfo: *info, Content: content[start:end], Truncated: end < int64(len(content))}
}
