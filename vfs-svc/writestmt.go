package vfssvc

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/wire"
)

// writeSQL checks a write and makes it in one statement, so that a group's
// writes go to Postgres in one round trip (design.md "Group commit"). cur
// is what the checks look at; ok holds a row only when every check passes,
// and then w writes the file and u keeps the usage row in step. The row
// returned carries cur and w's result, from which writeStmt gives the
// verdict; the two must agree. blocker probes the primary key once per
// ancestor: with path = ANY($3), a table without statistics yet (a new
// database) is planned as a scan of all the account's files.
//
// $1 account, $2 session, $3 the path's ancestors, $4 path, $5 and $6 the
// range of paths below it, $7 content, $8 its size, $9 overwrite, $10 the
// expected version (0: any), $11 the file size limit, $12 the quota, $13
// whether a file may be at the path when nothing is (false for a
// directory that exists without files, /memories).
const writeSQL = `WITH cur AS (
	SELECT
		(SELECT a.path FROM unnest($3::text[]) AS a(path) WHERE (SELECT true FROM vfs_files
			WHERE account_id = $1 AND session_id = $2 AND path = a.path) LIMIT 1) AS blocker,
		f.size, f.version,
		EXISTS (SELECT 1 FROM vfs_files WHERE account_id = $1 AND session_id = $2 AND path >= $5 AND path < $6) AS dir,
		u.bytes AS used
	FROM vfs_usage u LEFT JOIN vfs_files f ON f.account_id = $1 AND f.session_id = $2 AND f.path = $4
	WHERE u.account_id = $1
), ok AS (
	SELECT coalesce(size, 0) AS old FROM cur
	WHERE blocker IS NULL
		AND (size IS NOT NULL OR (NOT dir AND $13::boolean))
		AND (size IS NULL OR $9::boolean)
		AND ($10::bigint = 0 OR version = $10::bigint)
		AND $8::bigint <= $11::bigint
		AND ($8::bigint <= coalesce(size, 0) OR used + $8::bigint - coalesce(size, 0) <= $12::bigint)
), w AS (
	INSERT INTO vfs_files (account_id, session_id, path, content, size, version)
	SELECT $1, $2, $4, $7, $8::bigint, 1 FROM ok
	ON CONFLICT (account_id, session_id, path) DO UPDATE
	SET content = excluded.content, size = excluded.size, version = vfs_files.version + 1, modified = now()
	RETURNING version, modified
), u AS (
	UPDATE vfs_usage SET bytes = bytes + $8::bigint - ok.old FROM ok
	WHERE vfs_usage.account_id = $1 AND ok.old <> $8::bigint
)
SELECT cur.blocker, cur.size, cur.version, cur.dir, cur.used, w.version, w.modified FROM cur LEFT JOIN w ON true`

// writeStmt returns the change that writes req at l, and the answer it
// fills in when it succeeds.
func (s *Service) writeStmt(l loc, req *files.WriteRequest) (*files.FileInfo, *stmt) {
	out := &files.FileInfo{}
	size := int64(len(req.Content))
	memories := l.path+"/" == files.MemoriesRoot
	lo, hi := l.prefix()
	scan := func(row pgx.Row, c *change) error {
		var (
			blocker          *string
			curSize, version *int64
			dir              bool
			used             int64
			newVersion       *int64
			modified         *time.Time
		)
		if err := row.Scan(&blocker, &curSize, &version, &dir, &used, &newVersion, &modified); err != nil {
			return fmt.Errorf("writing %s: %w", l.path, err)
		}
		var cur *file
		if curSize != nil {
			cur = &file{size: *curSize, version: *version}
		}
		verdict := s.checkWrite(l, req, blocker, cur, dir || memories, used)
		if written := newVersion != nil; written != (verdict == nil) {
			return fmt.Errorf("writing %s: the statement (wrote: %t) and its checks (%v) disagree", l.path, written, verdict)
		}
		if verdict != nil {
			return verdict
		}
		var old int64
		if cur != nil {
			old = cur.size
		}
		c.used = used + size - old
		f := file{size: size, version: *newVersion, modified: *modified}
		*out = *f.info(l.path)
		return nil
	}
	return out, &stmt{sql: writeSQL, scan: scan, args: []any{l.account, l.session(), ancestors(l.path), l.path, lo, hi,
		req.Content, size, req.Overwrite, req.ExpectedVersion, int64(s.maxFile), int64(s.quota), !memories}}
}

// checkWrite is writeSQL's checks in Go, for their errors: blocker is a
// file above l, cur the file at l, dir whether l is a directory, used the
// account's bytes.
func (s *Service) checkWrite(l loc, req *files.WriteRequest, blocker *string, cur *file, dir bool, used int64) error {
	var old int64
	switch {
	case blocker != nil:
		return wire.Errorf(wire.NotDir, "%s is a file, so %s cannot be created", *blocker, l.path)
	case cur == nil && dir:
		return wire.Errorf(wire.IsDir, "%s is a directory", l.path)
	case cur != nil && !req.Overwrite:
		return wire.Errorf(wire.AlreadyExists, "%s exists (version %d)", l.path, cur.version)
	case req.ExpectedVersion > 0 && (cur == nil || cur.version != req.ExpectedVersion):
		return versionConflict(l.path, req.ExpectedVersion, cur)
	case cur != nil:
		old = cur.size
	}
	return s.checkGrowth(used, old, int64(len(req.Content)))
}
