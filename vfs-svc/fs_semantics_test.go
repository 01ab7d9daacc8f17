package vfssvc

import (
	"slices"
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/wire"
)

func TestWriteAndEdit(t *testing.T) {
	e := start(t, nil)
	c := ctx(t)
	sc := files.Scope{AccountID: e.account(t), SessionID: "s"}

	fi, err := e.fs.Write(c, &files.WriteRequest{Scope: sc, Path: "/a.txt", Content: "one two two"})
	wantCode(t, err, "")
	if fi.Version != 1 || fi.Size != 11 {
		t.Errorf("created %+v", fi)
	}
	_, err = e.fs.Write(c, &files.WriteRequest{Scope: sc, Path: "/a.txt", Content: "x"})
	wantCode(t, err, wire.AlreadyExists)
	_, err = e.fs.Write(c, &files.WriteRequest{Scope: sc, Path: "/a.txt", Content: "x", Overwrite: true, ExpectedVersion: 7})
	wantCode(t, err, wire.FailedPrecondition)
	_, err = e.fs.Write(c, &files.WriteRequest{Scope: sc, Path: "/new.txt", Content: "x", Overwrite: true, ExpectedVersion: 1})
	wantCode(t, err, wire.FailedPrecondition)

	edits := []struct {
		name     string
		req      files.EditRequest
		code     wire.Code
		replaced int
		want     string
	}{
		{"zero matches", files.EditRequest{Old: "three", New: "3"}, wire.FailedPrecondition, 0, "one two two"},
		{"several without replace_all", files.EditRequest{Old: "two", New: "2"}, wire.FailedPrecondition, 0, "one two two"},
		{"stale version", files.EditRequest{Old: "one", New: "1", ExpectedVersion: 5}, wire.FailedPrecondition, 0, "one two two"},
		{"empty old", files.EditRequest{Old: "", New: "1"}, wire.InvalidArgument, 0, "one two two"},
		{"unique", files.EditRequest{Old: "one", New: "1", ExpectedVersion: 1}, "", 1, "1 two two"},
		{"replace_all", files.EditRequest{Old: "two", New: "2", ReplaceAll: true}, "", 2, "1 2 2"},
	}
	for _, ed := range edits {
		req := ed.req
		req.Scope, req.Path = sc, "/a.txt"
		resp, err := e.fs.Edit(c, &req)
		wantCode(t, err, ed.code)
		if err == nil && resp.Replaced != ed.replaced {
			t.Errorf("%s: replaced %d, want %d", ed.name, resp.Replaced, ed.replaced)
		}
		r, err := e.fs.Read(c, &files.ReadRequest{Scope: sc, Path: "/a.txt"})
		wantCode(t, err, "")
		if r.Content != ed.want {
			t.Errorf("%s: content %q, want %q", ed.name, r.Content, ed.want)
		}
	}
	_, err = e.fs.Edit(c, &files.EditRequest{Scope: sc, Path: "/missing", Old: "a", New: "b"})
	wantCode(t, err, wire.NotFound)

	// Tree rules: no file below a file, no file over a directory.
	mustWrite(t, e, sc, "/d/x.txt", "x")
	_, err = e.fs.Write(c, &files.WriteRequest{Scope: sc, Path: "/a.txt/b", Content: "x"})
	wantCode(t, err, wire.NotDir)
	_, err = e.fs.Move(c, &files.MoveRequest{Scope: sc, From: "/d/x.txt", To: "/a.txt/b/y.txt"})
	wantCode(t, err, wire.NotDir)
	_, err = e.fs.Write(c, &files.WriteRequest{Scope: sc, Path: "/d", Content: "x", Overwrite: true})
	wantCode(t, err, wire.IsDir)
	_, err = e.fs.Read(c, &files.ReadRequest{Scope: sc, Path: "/d"})
	wantCode(t, err, wire.IsDir)
	_, err = e.fs.Ls(c, &files.LsRequest{Scope: sc, Path: "/a.txt"})
	wantCode(t, err, wire.NotDir)
	_, err = e.fs.Write(c, &files.WriteRequest{Scope: sc, Path: "/nul", Content: "a\x00b"})
	wantCode(t, err, wire.InvalidArgument)
}

func TestReadSlices(t *testing.T) {
	e := start(t, nil)
	c := ctx(t)
	sc := files.Scope{AccountID: e.account(t), SessionID: "s"}
	mustWrite(t, e, sc, "/f", "l1\nl2\nl3\nl4")
	tests := []struct {
		req       files.ReadRequest
		want      string
		start     int64
		truncated bool
	}{
		{files.ReadRequest{}, "l1\nl2\nl3\nl4", 1, false},
		{files.ReadRequest{Offset: 1, Limit: 2}, "l2\nl3\n", 2, true},
		{files.ReadRequest{Offset: 3}, "l4", 4, false},
		{files.ReadRequest{Offset: 9}, "", 10, false},
		{files.ReadRequest{Bytes: true, Offset: 3, Limit: 4}, "l2\nl", 0, true},
	}
	for _, tt := range tests {
		req := tt.req
		req.Scope, req.Path = sc, "/f"
		r, err := e.fs.Read(c, &req)
		wantCode(t, err, "")
		if r.Content != tt.want || r.StartLine != tt.start || r.Truncated != tt.truncated || (!req.Bytes && r.TotalLines != 4) {
			t.Errorf("read %+v = %+v", tt.req, r)
		}
	}
}

func TestGlobGrep(t *testing.T) {
	e := start(t, nil)
	c := ctx(t)
	sc := files.Scope{AccountID: e.account(t), SessionID: "s"}
	tree := map[string]string{
		"/src/main.go":        "package main\nfunc main() {\n\tprintln(\"TODO: hello\")\n}\n",
		"/src/lib/util.go":    "package lib\n// TODO one\n// todo two\nvar x = 1\n",
		"/src/lib/util_test":  "nothing here\n",
		"/docs/readme.md":     "# Title\nTODO write docs\n",
		"/memories/notes.md":  "remember TODO\n",
		"/src/lib/deep/a.go":  "package deep\n",
		"/src/lib/deep/b.txt": "x{3} literal braces\n",
	}
	for p, content := range tree {
		mustWrite(t, e, sc, p, content)
	}
	globs := []struct {
		pattern, dir string
		want         []string
	}{
		{"/src/**/*.go", "", []string{"/src/lib/deep/a.go", "/src/lib/util.go", "/src/main.go"}},
		{"**/*.md", "", []string{"/docs/readme.md", "/memories/notes.md"}},
		{"*.go", "/src", []string{"/src/main.go"}},
		{"lib/*", "/src", []string{"/src/lib/util.go", "/src/lib/util_test"}},
		{"/src/lib/util.go", "", []string{"/src/lib/util.go"}},
		{"/nope/**", "", []string{}},
	}
	for _, g := range globs {
		resp, err := e.fs.Glob(c, &files.GlobRequest{Scope: sc, Pattern: g.pattern, Path: g.dir})
		wantCode(t, err, "")
		if got := paths(resp.Files); !slices.Equal(got, g.want) {
			t.Errorf("glob %q in %q = %v, want %v", g.pattern, g.dir, got, g.want)
		}
	}

	greps := []struct {
		req  files.GrepRequest
		want []string
	}{
		{files.GrepRequest{Pattern: "TODO"}, []string{"/docs/readme.md", "/memories/notes.md", "/src/lib/util.go", "/src/main.go"}},
		{files.GrepRequest{Pattern: "TODO", Path: "/src"}, []string{"/src/lib/util.go", "/src/main.go"}},
		{files.GrepRequest{Pattern: "todo", IgnoreCase: true, Path: "/src/lib"}, []string{"/src/lib/util.go"}},
		{files.GrepRequest{Pattern: `^package \w+$`, Path: "/src"}, []string{"/src/lib/deep/a.go", "/src/lib/util.go", "/src/main.go"}},
		{files.GrepRequest{Pattern: `main\(\)\s*\{$`}, []string{"/src/main.go"}},
		{files.GrepRequest{Pattern: "x{3}", Literal: true}, []string{"/src/lib/deep/b.txt"}},
		{files.GrepRequest{Pattern: "x{3}"}, []string{}},
		{files.GrepRequest{Pattern: `(?i)todo: HELLO`}, []string{"/src/main.go"}},
		{files.GrepRequest{Pattern: `TODO.*two`}, []string{}}, // never across lines
		{files.GrepRequest{Pattern: "TODO", Path: "/src/main.go"}, []string{"/src/main.go"}},
	}
	for _, g := range greps {
		req := g.req
		req.Scope = sc
		resp, err := e.fs.Grep(c, &req)
		wantCode(t, err, "")
		if got := append([]string{}, resp.Files...); !slices.Equal(got, g.want) {
			t.Errorf("grep %+v = %v, want %v", g.req, got, g.want)
		}
	}

	content, err := e.fs.Grep(c, &files.GrepRequest{Scope: sc, Pattern: "(?i)todo", Path: "/src", Mode: files.GrepContent})
	wantCode(t, err, "")
	want := []files.GrepMatch{
		{Path: "/src/lib/util.go", Line: 2, Text: "// TODO one"},
		{Path: "/src/lib/util.go", Line: 3, Text: "// todo two"},
		{Path: "/src/main.go", Line: 3, Text: "\tprintln(\"TODO: hello\")"},
	}
	if !slices.Equal(content.Matches, want) {
		t.Errorf("content = %+v", content.Matches)
	}
	count, err := e.fs.Grep(c, &files.GrepRequest{Scope: sc, Pattern: "todo", IgnoreCase: true, Mode: files.GrepCount, Limit: 2})
	wantCode(t, err, "")
	if len(count.Matches) != 2 || !count.Truncated {
		t.Errorf("count = %+v", count)
	}
	count, err = e.fs.Grep(c, &files.GrepRequest{Scope: sc, Pattern: "todo", IgnoreCase: true, Mode: files.GrepCount, Path: "/src"})
	wantCode(t, err, "")
	if !slices.Equal(count.Matches, []files.GrepMatch{{Path: "/src/lib/util.go", Count: 2}, {Path: "/src/main.go", Count: 1}}) || count.Truncated {
		t.Errorf("count = %+v", count)
	}
	_, err = e.fs.Grep(c, &files.GrepRequest{Scope: sc, Pattern: "(unclosed"})
	wantCode(t, err, wire.InvalidArgument)
	_, err = e.fs.Grep(c, &files.GrepRequest{Scope: sc, Pattern: "a", Mode: "lines"})
	wantCode(t, err, wire.InvalidArgument)
}

func TestDeleteMove(t *testing.T) {
	e := start(t, nil)
	c := ctx(t)
	sc := files.Scope{AccountID: e.account(t), SessionID: "s"}
	mustWrite(t, e, sc, "/dir/a", "a")
	mustWrite(t, e, sc, "/dir/sub/b", "b")
	mustWrite(t, e, sc, "/other", "o")

	_, err := e.fs.Delete(c, &files.DeleteRequest{Scope: sc, Path: "/dir"})
	wantCode(t, err, wire.NotEmpty)
	_, err = e.fs.Delete(c, &files.DeleteRequest{Scope: sc, Path: "/nope"})
	wantCode(t, err, wire.NotFound)

	_, err = e.fs.Move(c, &files.MoveRequest{Scope: sc, From: "/dir/a", To: "/other"})
	wantCode(t, err, wire.AlreadyExists)
	mv, err := e.fs.Move(c, &files.MoveRequest{Scope: sc, From: "/dir/a", To: "/other", Overwrite: true})
	wantCode(t, err, "")
	if mv.Moved != 1 {
		t.Errorf("moved %d", mv.Moved)
	}
	r, err := e.fs.Read(c, &files.ReadRequest{Scope: sc, Path: "/other"})
	wantCode(t, err, "")
	if r.Content != "a" {
		t.Errorf("/other = %q", r.Content)
	}
	_, err = e.fs.Move(c, &files.MoveRequest{Scope: sc, From: "/other", To: "/dir", Overwrite: true})
	wantCode(t, err, wire.AlreadyExists)
	_, err = e.fs.Move(c, &files.MoveRequest{Scope: sc, From: "/dir", To: "/dir/sub/x"})
	wantCode(t, err, wire.InvalidArgument)
	// A directory moves with everything in it, across scopes too.
	mv, err = e.fs.Move(c, &files.MoveRequest{Scope: sc, From: "/dir", To: "/memories/kept"})
	wantCode(t, err, "")
	if mv.Moved != 1 {
		t.Errorf("moved %d", mv.Moved)
	}
	other := files.Scope{AccountID: sc.AccountID, SessionID: "other"}
	r, err = e.fs.Read(c, &files.ReadRequest{Scope: other, Path: "/memories/kept/sub/b"})
	wantCode(t, err, "")
	if r.Content != "b" {
		t.Errorf("moved file = %q", r.Content)
	}
	del, err := e.fs.Delete(c, &files.DeleteRequest{Scope: sc, Path: "/memories/kept", Recursive: true})
	wantCode(t, err, "")
	if del.Deleted != 1 {
		t.Errorf("deleted %d", del.Deleted)
	}
	_, err = e.fs.Stat(c, &files.StatRequest{Scope: sc, Path: "/memories/kept"})
	wantCode(t, err, wire.NotFound)
}

func TestLimits(t *testing.T) {
	e := start(t, func(c *conf.Config) { c.VFSMaxFileBytes, c.VFSQuotaBytes = 100, 250 })
	c := ctx(t)
	sc := files.Scope{AccountID: e.account(t), SessionID: "s"}
	_, err := e.fs.Write(c, &files.WriteRequest{Scope: sc, Path: "/big", Content: strings.Repeat("x", 101)})
	wantCode(t, err, wire.ResourceExhausted)
	mustWrite(t, e, sc, "/a", strings.Repeat("x", 100))
	mustWrite(t, e, sc, "/b", strings.Repeat("x", 100))
	_, err = e.fs.Write(c, &files.WriteRequest{Scope: sc, Path: "/c", Content: strings.Repeat("x", 51)})
	wantCode(t, err, wire.ResourceExhausted)
	_, err = e.fs.Edit(c, &files.EditRequest{Scope: sc, Path: "/a", Old: "x", New: "yy", ReplaceAll: true})
	wantCode(t, err, wire.ResourceExhausted)
	// A failed write changes nothing; deleting frees quota.
	_, err = e.fs.Stat(c, &files.StatRequest{Scope: sc, Path: "/c"})
	wantCode(t, err, wire.NotFound)
	_, err = e.fs.Delete(c, &files.DeleteRequest{Scope: sc, Path: "/b"})
	wantCode(t, err, "")
	mustWrite(t, e, sc, "/c", strings.Repeat("x", 100))
	var used int64
	if err := e.pool.QueryRow(c, `SELECT bytes FROM vfs_usage WHERE account_id = $1`, sc.AccountID).Scan(&used); err != nil || used != 200 {
		t.Errorf("usage = %d, %v", used, err)
	}
}
