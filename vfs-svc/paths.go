package vfssvc

import (
	"path"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"golang.org/x/text/unicode/norm"

	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/wire"
)

// maxPathBytes bounds a path after normalisation (vfs-svc/design.md "Virtual filesystem").
const maxPathBytes = 1024

// maxSessionBytes bounds a session id.
const maxSessionBytes = 200

// Kinds of location a path resolves to.
const (
	locSession = iota // the caller's session
	locAccount        // /memories/: the caller's account
	locMount          // /skills/: read-only
	locRoot           // "/": the union of the above
)

// loc is a resolved path: the rows it may touch are those of account with
// a session_id in sessions.
type loc struct {
	account  string
	path     string
	kind     int
	sessions []string
}

// session returns the session_id a write of this location stores.
func (l loc) session() string { return l.sessions[0] }

// prefix returns the first and the past-the-end key of everything below
// l.path in byte order: "/a/" up to "/a0" ('0' follows '/').
func (l loc) prefix() (lo, hi string) {
	if l.path == "/" {
		return "/", "0"
	}
	return l.path + "/", l.path + "0"
}

// cleanPath checks and normalises one path: absolute, valid UTF-8 in NFC,
// no NUL, no ".." segment, at most maxPathBytes. Redundant slashes, "."
// segments and a trailing slash are removed. A ".." is refused rather than
// resolved, so that a path never silently names another folder than the
// one the caller wrote.
func cleanPath(p string) (string, error) {
	switch {
	case p == "":
		return "", wire.Errorf(wire.InvalidArgument, "path is empty")
	case !utf8.ValidString(p):
		return "", wire.Errorf(wire.InvalidArgument, "path is not valid UTF-8")
	case strings.IndexByte(p, 0) >= 0:
		return "", wire.Errorf(wire.InvalidArgument, "path contains a NUL byte")
	case p[0] != '/':
		return "", wire.Errorf(wire.InvalidArgument, "path %q is not absolute", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", wire.Errorf(wire.InvalidArgument, "path %q contains \"..\"", p)
		}
	}
	c := path.Clean(norm.NFC.String(p))
	if len(c) > maxPathBytes {
		return "", wire.Errorf(wire.InvalidArgument, "path is longer than %d bytes", maxPathBytes)
	}
	return c, nil
}

// under reports whether p is root or inside it (root without its slash).
func under(p, root string) bool {
	return p == strings.TrimSuffix(root, "/") || strings.HasPrefix(p, root)
}

// resolve checks the scope and the path and says which rows it reaches.
func resolve(sc files.Scope, p string) (loc, error) {
	if _, err := uuid.Parse(sc.AccountID); err != nil {
		return loc{}, wire.Errorf(wire.InvalidArgument, "account id %q is not a UUID", sc.AccountID)
	}
	if len(sc.SessionID) > maxSessionBytes || strings.IndexByte(sc.SessionID, 0) >= 0 {
		return loc{}, wire.Errorf(wire.InvalidArgument, "session id is invalid")
	}
	c, err := cleanPath(p)
	if err != nil {
		return loc{}, err
	}
	l := loc{account: sc.AccountID, path: c}
	switch {
	case c == "/":
		l.kind = locRoot
		l.sessions = []string{""}
		if sc.SessionID != "" {
			l.sessions = append(l.sessions, sc.SessionID)
		}
	case under(c, files.MemoriesRoot):
		l.kind, l.sessions = locAccount, []string{""}
	case under(c, files.SkillsRoot):
		l.kind = locMount
	default:
		if sc.SessionID == "" {
			return loc{}, wire.Errorf(wire.InvalidArgument, "path %q is session-scoped and the request has no session id", c)
		}
		l.kind, l.sessions = locSession, []string{sc.SessionID}
	}
	return l, nil
}

// writable refuses locations that cannot be changed: the root, the two
// well-known roots themselves and the read-only mount.
func (l loc) writable() error {
	switch {
	case l.kind == locMount:
		return wire.Errorf(wire.PermissionDenied, "%s is read-only", files.SkillsRoot)
	case l.kind == locRoot || l.path+"/" == files.MemoriesRoot:
		return wire.Errorf(wire.IsDir, "%s is a directory", l.path)
	}
	return nil
}

// ancestors returns the proper ancestors of p below the root, nearest last.
func ancestors(p string) []string {
	var out []string
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[:i])
		}
	}
	return out
}
