package vfssvc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/wire"
)

// change is one account's write transaction, shared by a group of its
// changes (groupcommit.go). begin locks the account's usage row, which
// serialises the account's changes: the checks that keep the tree
// consistent (no file below a file, no file where a directory is) and the
// quota then cannot race.
type change struct {
	s       *Service
	tx      pgx.Tx
	account string
	used    int64 // the usage row's bytes, as this transaction last saw them
	delta   int64 // the change of used not yet in the usage row
}

func (s *Service) begin(ctx context.Context, account string) (*change, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("beginning transaction: %w", err)
	}
	c := &change{s: s, tx: tx, account: account}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO vfs_usage (account_id) VALUES ($1) ON CONFLICT DO NOTHING`, account)
	b.Queue(`SELECT bytes FROM vfs_usage WHERE account_id = $1 FOR UPDATE`, account).QueryRow(func(row pgx.Row) error {
		return row.Scan(&c.used)
	})
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		_ = tx.Rollback(ctx)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23503" {
			return nil, wire.Errorf(wire.NotFound, "no such account")
		}
		return nil, fmt.Errorf("locking account usage: %w", err)
	}
	return c, nil
}

// grow accounts for size going from old to new bytes, within the limits.
func (c *change) grow(old, new int64) error {
	if err := c.s.checkGrowth(c.used+c.delta, old, new); err != nil {
		return err
	}
	c.delta += new - old
	return nil
}

// checkGrowth checks that a file may go from old to new bytes while the
// account stores used bytes.
func (s *Service) checkGrowth(used, old, new int64) error {
	if new > int64(s.maxFile) {
		return wire.Errorf(wire.ResourceExhausted, "file would be %d bytes; the limit is %d (VFS_MAX_FILE_BYTES)", new, s.maxFile)
	}
	if d := new - old; d > 0 && used+d > int64(s.quota) {
		return wire.Errorf(wire.ResourceExhausted, "account quota of %d bytes would be exceeded (VFS_QUOTA_BYTES)", s.quota)
	}
	return nil
}

// commit records the usage change and commits.
func (c *change) commit(ctx context.Context) error {
	if c.delta != 0 {
		if _, err := c.tx.Exec(ctx, `UPDATE vfs_usage SET bytes = bytes + $2 WHERE account_id = $1`, c.account, c.delta); err != nil {
			return fmt.Errorf("updating usage: %w", err)
		}
	}
	if err := c.tx.Commit(ctx); err != nil {
		return fmt.Errorf("committing: %w", err)
	}
	return nil
}

func (c *change) rollback(ctx context.Context) { _ = c.tx.Rollback(context.WithoutCancel(ctx)) }

// placeable checks that a file may exist at l: no ancestor is a file and l
// is not a directory.
func (c *change) placeable(ctx context.Context, l loc) error {
	var blocker string
	// One probe of the primary key per ancestor, as writeSQL's blocker.
	err := c.tx.QueryRow(ctx, `SELECT a.path FROM unnest($3::text[]) AS a(path) WHERE (SELECT true FROM vfs_files
		WHERE account_id = $1 AND session_id = $2 AND path = a.path) LIMIT 1`,
		l.account, l.session(), ancestors(l.path)).Scan(&blocker)
	if err == nil {
		return wire.Errorf(wire.NotDir, "%s is a file, so %s cannot be created", blocker, l.path)
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("checking parents: %w", err)
	}
	if _, dir, err := lookup(ctx, c.tx, l); err != nil {
		return err
	} else if dir {
		return wire.Errorf(wire.IsDir, "%s is a directory", l.path)
	}
	return nil
}

// checkContent refuses what Postgres text cannot hold.
func checkContent(s string) error {
	if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
		return wire.Errorf(wire.InvalidArgument, "content must be UTF-8 text without NUL bytes")
	}
	return nil
}

func (s *Service) write(ctx context.Context, req *files.WriteRequest) (*files.FileInfo, error) {
	l, err := resolve(req.Scope, req.Path)
	if err != nil {
		return nil, err
	}
	if err := l.writable(); err != nil {
		return nil, err
	}
	if err := checkContent(req.Content); err != nil {
		return nil, err
	}
	if req.ExpectedVersion < 0 {
		return nil, wire.Errorf(wire.InvalidArgument, "expected_version must not be negative")
	}
	out, st := s.writeStmt(l, req)
	if err := s.changeStmt(ctx, l.account, st); err != nil {
		return nil, err
	}
	s.announceFiles(ctx, l)
	return out, nil
}

func versionConflict(p string, want int64, cur *file) error {
	if cur == nil {
		return wire.Errorf(wire.FailedPrecondition, "%s does not exist, expected version %d", p, want)
	}
	return wire.Errorf(wire.FailedPrecondition, "%s is at version %d, expected %d", p, cur.version, want)
}

func (s *Service) edit(ctx context.Context, req *files.EditRequest) (*files.EditResponse, error) {
	l, err := resolve(req.Scope, req.Path)
	if err != nil {
		return nil, err
	}
	if err := l.writable(); err != nil {
		return nil, err
	}
	if req.Old == "" {
		return nil, wire.Errorf(wire.InvalidArgument, "old must not be empty")
	}
	if err := checkContent(req.New); err != nil {
		return nil, err
	}
	var out *files.EditResponse
	err = s.change(ctx, l.account, func(ctx context.Context, c *change) error {
		var content string
		var cur file
		err := c.tx.QueryRow(ctx, `SELECT content, size, version FROM vfs_files
			WHERE account_id = $1 AND session_id = $2 AND path = $3`,
			l.account, l.session(), l.path).Scan(&content, &cur.size, &cur.version)
		if errors.Is(err, pgx.ErrNoRows) {
			return notAFile(ctx, c.tx, l)
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", l.path, err)
		}
		if req.ExpectedVersion > 0 && req.ExpectedVersion != cur.version {
			return versionConflict(l.path, req.ExpectedVersion, &cur)
		}
		n := strings.Count(content, req.Old)
		switch {
		case n == 0:
			return wire.Errorf(wire.FailedPrecondition, "old text not found in %s", l.path)
		case n > 1 && !req.ReplaceAll:
			return wire.Errorf(wire.FailedPrecondition, "old text occurs %d times in %s; give more context or set replace_all", n, l.path)
		}
		content = strings.ReplaceAll(content, req.Old, req.New)
		if err := c.grow(cur.size, int64(len(content))); err != nil {
			return err
		}
		f := file{size: int64(len(content))}
		err = c.tx.QueryRow(ctx, `UPDATE vfs_files SET content = $4, size = $5, version = version + 1, modified = now()
			WHERE account_id = $1 AND session_id = $2 AND path = $3 RETURNING version, modified`,
			l.account, l.session(), l.path, content, f.size).Scan(&f.version, &f.modified)
		if err != nil {
			return fmt.Errorf("editing %s: %w", l.path, err)
		}
		out = &files.EditResponse{FileInfo: *f.info(l.path), Replaced: n}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.announceFiles(ctx, l)
	return out, nil
}

func (s *Service) delete(ctx context.Context, req *files.DeleteRequest) (*files.DeleteResponse, error) {
	l, err := resolve(req.Scope, req.Path)
	if err != nil {
		return nil, err
	}
	if l.kind == locMount {
		return nil, l.writable()
	}
	if l.kind == locRoot {
		return nil, wire.Errorf(wire.InvalidArgument, "refusing to delete /")
	}
	var out *files.DeleteResponse
	err = s.change(ctx, l.account, func(ctx context.Context, c *change) error {
		var freed, n int64
		err := c.tx.QueryRow(ctx, `WITH d AS (DELETE FROM vfs_files
			WHERE account_id = $1 AND session_id = $2 AND path = $3 RETURNING size)
			SELECT coalesce(sum(size), 0), count(*) FROM d`, l.account, l.session(), l.path).Scan(&freed, &n)
		if err != nil {
			return fmt.Errorf("deleting %s: %w", l.path, err)
		}
		if n == 0 {
			_, dir, err := lookup(ctx, c.tx, l)
			switch {
			case err != nil:
				return err
			case !dir:
				return wire.Errorf(wire.NotFound, "%s does not exist", l.path)
			case !req.Recursive:
				return wire.Errorf(wire.NotEmpty, "%s is a directory; set recursive to delete it and everything in it", l.path)
			}
			lo, hi := l.prefix()
			err = c.tx.QueryRow(ctx, `WITH d AS (DELETE FROM vfs_files
				WHERE account_id = $1 AND session_id = $2 AND path >= $3 AND path < $4 RETURNING size)
				SELECT coalesce(sum(size), 0), count(*) FROM d`, l.account, l.session(), lo, hi).Scan(&freed, &n)
			if err != nil {
				return fmt.Errorf("deleting %s: %w", l.path, err)
			}
		}
		c.delta -= freed
		out = &files.DeleteResponse{Deleted: n}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.announceFiles(ctx, l)
	return out, nil
}

func (s *Service) move(ctx context.Context, req *files.MoveRequest) (*files.MoveResponse, error) {
	from, err := resolve(req.Scope, req.From)
	if err != nil {
		return nil, err
	}
	to, err := resolve(req.Scope, req.To)
	if err != nil {
		return nil, err
	}
	for _, l := range []loc{from, to} {
		if err := l.writable(); err != nil {
			return nil, err
		}
	}
	if from.path == to.path || strings.HasPrefix(to.path, from.path+"/") {
		return nil, wire.Errorf(wire.InvalidArgument, "cannot move %s onto or into itself", from.path)
	}
	var out *files.MoveResponse
	err = s.change(ctx, from.account, func(ctx context.Context, c *change) error {
		src, srcDir, err := lookup(ctx, c.tx, from)
		if err != nil {
			return err
		}
		if src == nil && !srcDir {
			return wire.Errorf(wire.NotFound, "%s does not exist", from.path)
		}
		dst, dstDir, err := lookup(ctx, c.tx, to)
		switch {
		case err != nil:
			return err
		case dstDir:
			return wire.Errorf(wire.AlreadyExists, "%s is an existing directory", to.path)
		case dst != nil && (srcDir || !req.Overwrite):
			return wire.Errorf(wire.AlreadyExists, "%s exists; set overwrite to replace it", to.path)
		}
		if err := c.placeable(ctx, to); err != nil {
			return err
		}
		if dst != nil {
			if _, err := c.tx.Exec(ctx, `DELETE FROM vfs_files WHERE account_id = $1 AND session_id = $2 AND path = $3`,
				to.account, to.session(), to.path); err != nil {
				return fmt.Errorf("replacing %s: %w", to.path, err)
			}
			c.delta -= dst.size
		}
		var tag pgconn.CommandTag
		if src != nil {
			tag, err = c.tx.Exec(ctx, `UPDATE vfs_files SET session_id = $4, path = $5, version = version + 1, modified = now()
				WHERE account_id = $1 AND session_id = $2 AND path = $3`,
				from.account, from.session(), from.path, to.session(), to.path)
		} else {
			lo, hi := from.prefix()
			tag, err = c.tx.Exec(ctx, `UPDATE vfs_files SET session_id = $5, path = $6 || substr(path, $7),
				version = version + 1, modified = now()
				WHERE account_id = $1 AND session_id = $2 AND path >= $3 AND path < $4`,
				from.account, from.session(), lo, hi, to.session(), to.path, utf8.RuneCountInString(from.path)+1)
		}
		if err != nil {
			return fmt.Errorf("moving %s: %w", from.path, err)
		}
		out = &files.MoveResponse{Moved: tag.RowsAffected()}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.announceFiles(ctx, from, to)
	return out, nil
}
