package vfssvc

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/wire"
)

func TestCleanPath(t *testing.T) {
	long := "/" + strings.Repeat("a", 1023)
	tests := []struct {
		in, want string
		code     wire.Code
	}{
		{in: "/a/b.txt", want: "/a/b.txt"},
		{in: "//a///b/./c/", want: "/a/b/c"},
		{in: "/", want: "/"},
		{in: "/cafe\u0301", want: "/caf\u00e9"}, // NFD becomes NFC
		{in: long, want: long},
		{in: long + "b", code: wire.InvalidArgument},
		{in: "", code: wire.InvalidArgument},
		{in: "a/b", code: wire.InvalidArgument},
		{in: "./a", code: wire.InvalidArgument},
		{in: "/a/../b", code: wire.InvalidArgument},
		{in: "/..", code: wire.InvalidArgument},
		{in: "/a/..", code: wire.InvalidArgument},
		{in: "/a\x00b", code: wire.InvalidArgument},
		{in: "/a\xffb", code: wire.InvalidArgument},
		{in: "/a..b/c..", want: "/a..b/c.."},
	}
	for _, tt := range tests {
		got, err := cleanPath(tt.in)
		wantCode(t, err, tt.code)
		if got != tt.want {
			t.Errorf("cleanPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPathRulesOverNATS(t *testing.T) {
	e := start(t, nil)
	c := ctx(t)
	a := files.Scope{AccountID: e.account(t), SessionID: "s1"}
	for _, p := range []string{"rel.txt", "/a/../b", "/a\x00", "/" + strings.Repeat("x", 1100)} {
		_, err := e.fs.Write(c, &files.WriteRequest{Scope: a, Path: p, Content: "x"})
		wantCode(t, err, wire.InvalidArgument)
	}
	// NFD and NFC spellings name the same file.
	if _, err := e.fs.Write(c, &files.WriteRequest{Scope: a, Path: "/cafe\u0301.md", Content: "x"}); err != nil {
		t.Fatal(err)
	}
	st, err := e.fs.Stat(c, &files.StatRequest{Scope: a, Path: "/caf\u00e9.md"})
	wantCode(t, err, "")
	if st.Path != "/caf\u00e9.md" {
		t.Errorf("stat path = %q", st.Path)
	}
	// Session paths need a session; /memories/ does not.
	_, err = e.fs.Write(c, &files.WriteRequest{Scope: files.Scope{AccountID: a.AccountID}, Path: "/x", Content: "x"})
	wantCode(t, err, wire.InvalidArgument)
	_, err = e.fs.Write(c, &files.WriteRequest{Scope: files.Scope{AccountID: a.AccountID}, Path: "/memories/x", Content: "x"})
	wantCode(t, err, "")
	_, err = e.fs.Write(c, &files.WriteRequest{Scope: files.Scope{AccountID: "not-a-uuid", SessionID: "s"}, Path: "/x", Content: "x"})
	wantCode(t, err, wire.InvalidArgument)
}

func TestScopes(t *testing.T) {
	skills := t.TempDir()
	if err := os.MkdirAll(filepath.Join(skills, "pdf", "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(skills, "pdf", "SKILL.md"), []byte("---\nname: pdf\n---\nUse pdftotext.\n"), 0o644)
	os.WriteFile(filepath.Join(skills, "pdf", "docs", "ref.md"), []byte("reference\npdftotext flags\n"), 0o644)
	e := start(t, func(c *conf.Config) { c.SkillDirs = []string{skills} })
	c := ctx(t)
	acct := e.account(t)
	s1 := files.Scope{AccountID: acct, SessionID: "s1"}
	s2 := files.Scope{AccountID: acct, SessionID: "s2"}
	mustWrite(t, e, s1, "/notes.md", "session one")
	mustWrite(t, e, s1, "/memories/prefs.md", "likes tea")

	// Session files are per session; memories are per account.
	_, err := e.fs.Read(c, &files.ReadRequest{Scope: s2, Path: "/notes.md"})
	wantCode(t, err, wire.NotFound)
	r, err := e.fs.Read(c, &files.ReadRequest{Scope: s2, Path: "/memories/prefs.md"})
	wantCode(t, err, "")
	if r.Content != "likes tea" {
		t.Errorf("memories read %q", r.Content)
	}
	ls, err := e.fs.Ls(c, &files.LsRequest{Scope: s1, Path: "/"})
	wantCode(t, err, "")
	if got := paths(ls.Entries); !slices.Equal(got, []string{"/memories", "/notes.md", "/skills"}) {
		t.Errorf("ls / = %v", got)
	}

	// The mount is readable and read-only.
	r, err = e.fs.Read(c, &files.ReadRequest{Scope: s1, Path: "/skills/pdf/SKILL.md", Offset: 3})
	wantCode(t, err, "")
	if r.Content != "Use pdftotext.\n" || !r.ReadOnly {
		t.Errorf("skill read = %+v", r)
	}
	g, err := e.fs.Grep(c, &files.GrepRequest{Scope: s1, Pattern: "pdftotext", Mode: files.GrepContent})
	wantCode(t, err, "")
	if len(g.Matches) != 2 || g.Matches[0].Path != "/skills/pdf/SKILL.md" || g.Matches[1].Line != 2 {
		t.Errorf("grep over mount = %+v", g.Matches)
	}
	gl, err := e.fs.Glob(c, &files.GlobRequest{Scope: s1, Pattern: "/skills/**/*.md"})
	wantCode(t, err, "")
	if got := paths(gl.Files); !slices.Equal(got, []string{"/skills/pdf/SKILL.md", "/skills/pdf/docs/ref.md"}) {
		t.Errorf("glob over mount = %v", got)
	}
	_, err = e.fs.Write(c, &files.WriteRequest{Scope: s1, Path: "/skills/pdf/new.md", Content: "x"})
	wantCode(t, err, wire.PermissionDenied)
	_, err = e.fs.Delete(c, &files.DeleteRequest{Scope: s1, Path: "/skills/pdf", Recursive: true})
	wantCode(t, err, wire.PermissionDenied)
	_, err = e.fs.Read(c, &files.ReadRequest{Scope: s1, Path: "/skills/pdf/../../etc/passwd"})
	wantCode(t, err, wire.InvalidArgument)
}

// TestIsolation writes look-alike files for two accounts and checks that
// nothing of B's reaches A, whatever the path or pattern.
func TestIsolation(t *testing.T) {
	e := start(t, nil)
	c := ctx(t)
	a := files.Scope{AccountID: e.account(t), SessionID: "same"}
	b := files.Scope{AccountID: e.account(t), SessionID: "same"}
	names := []string{"/100%.md", "/a_b.md", "/x.*+?(|)[]{}^$\\.md", "/memories/secret_%.md", "/dir/file.md"}
	for _, n := range names {
		mustWrite(t, e, b, n, "SECRET of B: % _ .* [x] (y) $ ^ \\")
	}
	mustWrite(t, e, a, "/mine.md", "mine")
	for _, n := range names {
		_, err := e.fs.Read(c, &files.ReadRequest{Scope: a, Path: n})
		wantCode(t, err, wire.NotFound)
		_, err = e.fs.Stat(c, &files.StatRequest{Scope: a, Path: n})
		wantCode(t, err, wire.NotFound)
	}
	for _, dir := range []string{"/", "/memories"} {
		ls, err := e.fs.Ls(c, &files.LsRequest{Scope: a, Path: dir})
		wantCode(t, err, "")
		for _, en := range ls.Entries {
			if en.Path != "/mine.md" && en.Path != "/memories" && en.Path != "/skills" {
				t.Errorf("ls %s leaked %s", dir, en.Path)
			}
		}
	}
	_, err := e.fs.Ls(c, &files.LsRequest{Scope: a, Path: "/dir"})
	wantCode(t, err, wire.NotFound)
	for _, pat := range []string{"**", "/**", "**/*", "/*%*", "/*_*", "/**/*.md", "/x.*", "/[a-z]*"} {
		g, err := e.fs.Glob(c, &files.GlobRequest{Scope: a, Pattern: pat})
		wantCode(t, err, "")
		for _, f := range g.Files {
			if f.Path != "/mine.md" {
				t.Errorf("glob %q leaked %s", pat, f.Path)
			}
		}
	}
	for _, tc := range []struct {
		pat     string
		literal bool
	}{{"SECRET", false}, {".*", false}, {"%", true}, {"_", true}, {`\$`, false}, {"[x]", true}, {"(y)", true}, {"^", false}, {`\\`, false}, {"", false}} {
		for _, mode := range []string{files.GrepFilesWithMatches, files.GrepContent, files.GrepCount} {
			g, err := e.fs.Grep(c, &files.GrepRequest{Scope: a, Pattern: tc.pat, Literal: tc.literal, Mode: mode})
			if tc.pat == "" {
				wantCode(t, err, wire.InvalidArgument)
				continue
			}
			wantCode(t, err, "")
			for _, m := range append(g.Matches, files.GrepMatch{Path: strings.Join(g.Files, "")}) {
				if strings.Contains(m.Text, "SECRET") || (m.Path != "" && m.Path != "/mine.md") {
					t.Errorf("grep %q (%s) leaked %+v", tc.pat, mode, m)
				}
			}
		}
	}
	// B still has everything.
	g, err := e.fs.Grep(c, &files.GrepRequest{Scope: b, Pattern: "%", Literal: true})
	wantCode(t, err, "")
	if len(g.Files) != len(names) {
		t.Errorf("B's grep found %v", g.Files)
	}
}

func mustWrite(t testing.TB, e *env, sc files.Scope, p, content string) *files.FileInfo {
	t.Helper()
	fi, err := e.fs.Write(ctx(t), &files.WriteRequest{Scope: sc, Path: p, Content: content, Overwrite: true})
	if err != nil {
		t.Fatalf("writing %s: %v", p, err)
	}
	return fi
}

func paths(fis []files.FileInfo) []string {
	out := make([]string, len(fis))
	for i, f := range fis {
		out[i] = f.Path
	}
	return out
}

func TestConcurrentEdits(t *testing.T) {
	e := start(t, nil)
	c := ctx(t)
	sc := files.Scope{AccountID: e.account(t), SessionID: "s"}
	mustWrite(t, e, sc, "/log.txt", "start\n")
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r, err := e.fs.Read(c, &files.ReadRequest{Scope: sc, Path: "/log.txt"})
				if err != nil {
					errs <- err
					return
				}
				_, err = e.fs.Write(c, &files.WriteRequest{Scope: sc, Path: "/log.txt", Overwrite: true,
					ExpectedVersion: r.Version, Content: r.Content + fmt.Sprintf("line %d\n", i)})
				if wire.CodeOf(err) == wire.FailedPrecondition {
					continue // someone else won; read again
				}
				errs <- err
				return
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	r, err := e.fs.Read(c, &files.ReadRequest{Scope: sc, Path: "/log.txt"})
	wantCode(t, err, "")
	for i := range n {
		if !strings.Contains(r.Content, fmt.Sprintf("line %d\n", i)) {
			t.Errorf("line %d lost:\n%s", i, r.Content)
		}
	}
	if r.TotalLines != n+1 || r.Version != n+1 {
		t.Errorf("total lines %d, version %d", r.TotalLines, r.Version)
	}
}
