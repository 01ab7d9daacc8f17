// Package files is the vfs-svc contract of the virtual filesystem: the
// files a Deep agent's tools read and write, scoped to an account and a
// chat session.
package files

import (
	"context"
	"time"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Endpoints of the virtual filesystem (vfs-svc/design.md "Virtual filesystem").
var (
	Stat   = wire.Endpoint[StatRequest, FileInfo]{Subject: "vfs.fs.stat", Idempotent: true}
	Ls     = wire.Endpoint[LsRequest, LsResponse]{Subject: "vfs.fs.ls", Idempotent: true}
	Read   = wire.Endpoint[ReadRequest, ReadResponse]{Subject: "vfs.fs.read", Idempotent: true}
	Write  = wire.Endpoint[WriteRequest, FileInfo]{Subject: "vfs.fs.write"}
	Edit   = wire.Endpoint[EditRequest, EditResponse]{Subject: "vfs.fs.edit"}
	Glob   = wire.Endpoint[GlobRequest, GlobResponse]{Subject: "vfs.fs.glob", Idempotent: true}
	Grep   = wire.Endpoint[GrepRequest, GrepResponse]{Subject: "vfs.fs.grep", Idempotent: true}
	Delete = wire.Endpoint[DeleteRequest, DeleteResponse]{Subject: "vfs.fs.delete"}
	Move   = wire.Endpoint[MoveRequest, MoveResponse]{Subject: "vfs.fs.move"}
)

// Well-known roots of the filesystem a session sees.
const (
	// MemoriesRoot holds account-scoped files, shared by every session of
	// the account.
	MemoriesRoot = "/memories/"
	// SkillsRoot is the read-only mount of SKILL_DIRS: /skills/<skill>/<file>.
	SkillsRoot = "/skills/"
)

// Grep output modes.
const (
	GrepFilesWithMatches = "files_with_matches"
	GrepContent          = "content"
	GrepCount            = "count"
)

// Scope names the caller whose files a request reaches. Every request
// carries one: the account is always part of every query, so no path can
// reach another account's files. Paths under /memories/ belong to the
// account; /skills/ is a read-only mount; every other path belongs to the
// session and needs SessionID.
type Scope struct {
	AccountID string `json:"account_id"`
	SessionID string `json:"session_id,omitempty"`
}

// FileInfo describes a file or an implied directory.
type FileInfo struct {
	Path  string `json:"path"`
	IsDir bool   `json:"is_dir,omitempty"`
	// Size is the file's length in bytes (zero for a directory).
	Size int64 `json:"size,omitempty"`
	// Version increases by one on every change of the file; it is what a
	// guarded write or edit expects. Zero for directories and mounts.
	Version  int64      `json:"version,omitempty"`
	Modified *time.Time `json:"modified,omitempty"`
	// ReadOnly is set for files and folders of a read-only mount.
	ReadOnly bool `json:"read_only,omitempty"`
}

// StatRequest describes one path.
type StatRequest struct {
	Scope
	Path string `json:"path"`
}

// LsRequest lists the direct children of a directory.
type LsRequest struct {
	Scope
	Path string `json:"path"`
}

// LsResponse holds the children, sorted by name.
type LsResponse struct {
	Entries []FileInfo `json:"entries"`
}

// ReadRequest reads a file in lines (the default) or in bytes.
type ReadRequest struct {
	Scope
	Path string `json:"path"`
	// Offset is the first line (0-based) in line mode, the first byte in
	// byte mode.
	Offset int64 `json:"offset,omitempty"`
	// Limit is the number of lines (default DefaultReadLines) or bytes (default and
	// maximum MaxReadBytes).
	Limit int64 `json:"limit,omitempty"`
	// Bytes selects byte mode.
	Bytes bool `json:"bytes,omitempty"`
}

// DefaultReadLines is a line-mode read's limit when the caller gives none.
const DefaultReadLines = 2000

// MaxReadBytes bounds one read's content, so a reply fits a NATS message.
const MaxReadBytes = 512 << 10

// ReadResponse is a slice of a file. In line mode Content is the raw lines
// (with their newlines) starting at line StartLine (1-based); numbering them
// is the caller's job. Truncated says more content follows.
type ReadResponse struct {
	FileInfo
	Content    string `json:"content"`
	StartLine  int64  `json:"start_line,omitempty"`
	TotalLines int64  `json:"total_lines,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
}

// WriteRequest writes a whole file. Without Overwrite it only creates
// (already_exists if the file exists). With Overwrite it replaces the file,
// creating it if missing; a non-zero ExpectedVersion must then equal the
// file's current version, else failed_precondition.
type WriteRequest struct {
	Scope
	Path            string `json:"path"`
	Content         string `json:"content"`
	Overwrite       bool   `json:"overwrite,omitempty"`
	ExpectedVersion int64  `json:"expected_version,omitempty"`
}

// EditRequest replaces Old by New in a file. Old must occur exactly once
// unless ReplaceAll; zero occurrences, or several without ReplaceAll, are
// failed_precondition. A non-zero ExpectedVersion guards the edit.
type EditRequest struct {
	Scope
	Path            string `json:"path"`
	Old             string `json:"old"`
	New             string `json:"new"`
	ReplaceAll      bool   `json:"replace_all,omitempty"`
	ExpectedVersion int64  `json:"expected_version,omitempty"`
}

// EditResponse reports the edited file and how many occurrences changed.
type EditResponse struct {
	FileInfo
	Replaced int `json:"replaced"`
}

// GlobRequest finds files whose path matches Pattern: `*`, `?` and `[...]`
// within one path segment, `**` across any number of segments. A relative
// pattern is taken relative to Path (default "/").
type GlobRequest struct {
	Scope
	Pattern string `json:"pattern"`
	Path    string `json:"path,omitempty"`
	// Limit bounds the result (default and maximum 1000).
	Limit int `json:"limit,omitempty"`
}

// GlobResponse lists matching files sorted by path.
type GlobResponse struct {
	Files     []FileInfo `json:"files"`
	Truncated bool       `json:"truncated,omitempty"`
}

// GrepRequest searches file contents line by line. Pattern is RE2 syntax
// unless Literal. Path limits the search to one file or directory (default
// "/"). Mode is files_with_matches (default), content or count.
type GrepRequest struct {
	Scope
	Pattern    string `json:"pattern"`
	Literal    bool   `json:"literal,omitempty"`
	IgnoreCase bool   `json:"ignore_case,omitempty"`
	Path       string `json:"path,omitempty"`
	Mode       string `json:"mode,omitempty"`
	// Limit bounds files (files_with_matches, count) or lines (content);
	// default 500, maximum 5000.
	Limit int `json:"limit,omitempty"`
}

// GrepMatch is one matching line (content mode) or one file's count.
type GrepMatch struct {
	Path  string `json:"path"`
	Line  int64  `json:"line,omitempty"`
	Text  string `json:"text,omitempty"`
	Count int64  `json:"count,omitempty"`
}

// GrepResponse holds paths (files_with_matches) or matches (content,
// count), sorted by path then line.
type GrepResponse struct {
	Files     []string    `json:"files,omitempty"`
	Matches   []GrepMatch `json:"matches,omitempty"`
	Truncated bool        `json:"truncated,omitempty"`
}

// DeleteRequest deletes a file, or a directory with everything in it when
// Recursive (a directory without Recursive is not_empty).
type DeleteRequest struct {
	Scope
	Path      string `json:"path"`
	Recursive bool   `json:"recursive,omitempty"`
}

// DeleteResponse counts the files removed.
type DeleteResponse struct {
	Deleted int64 `json:"deleted"`
}

// MoveRequest renames a file or a directory. An existing destination is
// already_exists unless Overwrite, which may replace a file (never a
// directory).
type MoveRequest struct {
	Scope
	From      string `json:"from"`
	To        string `json:"to"`
	Overwrite bool   `json:"overwrite,omitempty"`
}

// MoveResponse counts the files moved.
type MoveResponse struct {
	Moved int64 `json:"moved"`
}

// FS is the typed client of the virtual filesystem.
type FS struct{ c *wire.Client }

// NewFS returns an FS client over c.
func NewFS(c *wire.Client) *FS { return &FS{c: c} }

// Stat describes a path.
func (f *FS) Stat(ctx context.Context, req *StatRequest) (*FileInfo, error) {
	return Stat.Call(ctx, f.c, req)
}

// Ls lists a directory.
func (f *FS) Ls(ctx context.Context, req *LsRequest) (*LsResponse, error) {
	return Ls.Call(ctx, f.c, req)
}

// Read reads part of a file.
func (f *FS) Read(ctx context.Context, req *ReadRequest) (*ReadResponse, error) {
	return Read.Call(ctx, f.c, req)
}

// Write creates or overwrites a file.
func (f *FS) Write(ctx context.Context, req *WriteRequest) (*FileInfo, error) {
	return Write.Call(ctx, f.c, req)
}

// Edit replaces text in a file.
func (f *FS) Edit(ctx context.Context, req *EditRequest) (*EditResponse, error) {
	return Edit.Call(ctx, f.c, req)
}

// Glob finds files by path pattern.
func (f *FS) Glob(ctx context.Context, req *GlobRequest) (*GlobResponse, error) {
	return Glob.Call(ctx, f.c, req)
}

// Grep searches file contents.
func (f *FS) Grep(ctx context.Context, req *GrepRequest) (*GrepResponse, error) {
	return Grep.Call(ctx, f.c, req)
}

// Delete deletes a file or a directory.
func (f *FS) Delete(ctx context.Context, req *DeleteRequest) (*DeleteResponse, error) {
	return Delete.Call(ctx, f.c, req)
}

// Move renames a file or a directory.
func (f *FS) Move(ctx context.Context, req *MoveRequest) (*MoveResponse, error) {
	return Move.Call(ctx, f.c, req)
}
