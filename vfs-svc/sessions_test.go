package vfssvc

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	"github.com/mirobody/mirobody-go/services/wire"
)

func TestSessions(t *testing.T) {
	e := start(t, nil)
	ss := sessions.NewSessions(e.client)
	c := ctx(t)
	alice, bob := e.account(t), e.account(t)
	save := func(account, id, q string, msgs string) error {
		_, err := ss.Save(c, &sessions.SessionSaveRequest{AccountID: account, SessionID: id, Title: q, Agent: "deep",
			Messages: json.RawMessage(msgs), Turn: sessions.Turn{RunID: "run-" + id + "-" + q, Question: q, Answer: "a " + q, Finish: "stop", Events: json.RawMessage(`[{"type":"text","text":"a"}]`)}})
		return err
	}
	wantCode(t, save(alice, "s1", "first", `[{"role":"user","content":"first"}]`), "")
	wantCode(t, save(alice, "s1", "second", `[{"role":"user","content":"first"},{"role":"user","content":"second"}]`), "")

	t.Run("validation and isolation", func(t *testing.T) {
		cases := []struct {
			name string
			err  error
			code wire.Code
		}{
			{"bad session id", save(alice, "a/b", "q", `[]`), wire.InvalidArgument},
			{"bad messages", save(alice, "s2", "q", `{`), wire.InvalidArgument},
			{"another account's session", save(bob, "s1", "q", `[]`), wire.AlreadyExists},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) { wantCode(t, tc.err, tc.code) })
		}
		// Loading names the id as taken (a turn is refused before it runs)
		// without handing out the other account's messages.
		l, err := ss.Load(c, &sessions.SessionLoadRequest{AccountID: bob, SessionID: "s1"})
		wantCode(t, err, wire.AlreadyExists)
		if l != nil {
			t.Fatalf("another account's session loaded: %+v", l)
		}
		_, err = ss.Get(c, &sessions.SessionGetRequest{AccountID: bob, SessionID: "s1"})
		wantCode(t, err, wire.NotFound)
		_, err = ss.Delete(c, &sessions.SessionDeleteRequest{AccountID: bob, SessionID: "s1"})
		wantCode(t, err, wire.NotFound)
	})

	t.Run("load and get", func(t *testing.T) {
		l, err := ss.Load(c, &sessions.SessionLoadRequest{AccountID: alice, SessionID: "s1"})
		wantCode(t, err, "")
		var msgs []map[string]string
		if json.Unmarshal(l.Messages, &msgs) != nil || len(msgs) != 2 || l.Session.Turns != 2 || l.Session.Title != "first" {
			t.Fatalf("load %+v %s", l.Session, l.Messages)
		}
		g, err := ss.Get(c, &sessions.SessionGetRequest{AccountID: alice, SessionID: "s1"})
		wantCode(t, err, "")
		if len(g.Turns) != 2 || g.Turns[0].Question != "first" || g.Turns[1].Answer != "a second" || g.Turns[1].Seq != 2 {
			t.Fatalf("get %+v", g.Turns)
		}
	})

	t.Run("rename", func(t *testing.T) {
		got, err := ss.Rename(c, &sessions.SessionRenameRequest{AccountID: alice, SessionID: "s1", Title: "  Blood   tests "})
		wantCode(t, err, "")
		if got.Title != "Blood tests" || got.Turns != 2 {
			t.Fatalf("renamed %+v", got)
		}
		cases := []struct {
			name string
			req  sessions.SessionRenameRequest
			code wire.Code
		}{
			{"empty", sessions.SessionRenameRequest{AccountID: alice, SessionID: "s1", Title: " "}, wire.InvalidArgument},
			{"too long", sessions.SessionRenameRequest{AccountID: alice, SessionID: "s1", Title: strings.Repeat("é", sessions.MaxSessionTitle+1)}, wire.InvalidArgument},
			{"another account's", sessions.SessionRenameRequest{AccountID: bob, SessionID: "s1", Title: "mine"}, wire.NotFound},
			{"absent", sessions.SessionRenameRequest{AccountID: alice, SessionID: "nope", Title: "x"}, wire.NotFound},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, err := ss.Rename(c, &tc.req)
				wantCode(t, err, tc.code)
			})
		}
		g, err := ss.Get(c, &sessions.SessionGetRequest{AccountID: alice, SessionID: "s1"})
		wantCode(t, err, "")
		if g.Session.Title != "Blood tests" {
			t.Fatalf("title after rename %q", g.Session.Title)
		}
	})

	t.Run("list pages newest first", func(t *testing.T) {
		for i := range 5 {
			wantCode(t, save(alice, fmt.Sprintf("p%d", i), "q", `[]`), "")
		}
		var ids []string
		cursor := ""
		for range 10 {
			page, err := ss.List(c, &sessions.SessionListRequest{AccountID: alice, Limit: 2, Cursor: cursor})
			wantCode(t, err, "")
			for _, s := range page.Sessions {
				ids = append(ids, s.ID)
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if fmt.Sprint(ids) != "[p4 p3 p2 p1 p0 s1]" {
			t.Fatalf("listed %v", ids)
		}
		page, err := ss.List(c, &sessions.SessionListRequest{AccountID: bob})
		wantCode(t, err, "")
		if len(page.Sessions) != 0 {
			t.Fatalf("bob sees %+v", page.Sessions)
		}
		_, err = ss.List(c, &sessions.SessionListRequest{AccountID: alice, Cursor: "!!"})
		wantCode(t, err, wire.InvalidArgument)
	})

	t.Run("delete removes the session's files only", func(t *testing.T) {
		for _, p := range []string{"/a.md", "/dir/b.md"} {
			_, err := e.fs.Write(c, &files.WriteRequest{Scope: files.Scope{AccountID: alice, SessionID: "s1"}, Path: p, Content: "12345"})
			wantCode(t, err, "")
		}
		_, err := e.fs.Write(c, &files.WriteRequest{Scope: files.Scope{AccountID: alice, SessionID: "s1"}, Path: "/memories/keep.md", Content: "keep"})
		wantCode(t, err, "")
		_, err = e.fs.Write(c, &files.WriteRequest{Scope: files.Scope{AccountID: alice, SessionID: "p0"}, Path: "/other.md", Content: "other"})
		wantCode(t, err, "")
		var before int64
		if err := e.pool.QueryRow(c, `SELECT bytes FROM vfs_usage WHERE account_id = $1`, alice).Scan(&before); err != nil {
			t.Fatal(err)
		}
		d, err := ss.Delete(c, &sessions.SessionDeleteRequest{AccountID: alice, SessionID: "s1"})
		wantCode(t, err, "")
		if d.FilesDeleted != 2 {
			t.Fatalf("deleted %d files", d.FilesDeleted)
		}
		var after int64
		if err := e.pool.QueryRow(c, `SELECT bytes FROM vfs_usage WHERE account_id = $1`, alice).Scan(&after); err != nil {
			t.Fatal(err)
		}
		if before-after != 10 {
			t.Fatalf("usage %d -> %d, want 10 bytes less", before, after)
		}
		_, err = e.fs.Stat(c, &files.StatRequest{Scope: files.Scope{AccountID: alice, SessionID: "s1"}, Path: "/memories/keep.md"})
		wantCode(t, err, "")
		_, err = e.fs.Stat(c, &files.StatRequest{Scope: files.Scope{AccountID: alice, SessionID: "p0"}, Path: "/other.md"})
		wantCode(t, err, "")
		_, err = ss.Get(c, &sessions.SessionGetRequest{AccountID: alice, SessionID: "s1"})
		wantCode(t, err, wire.NotFound)
	})
}

func TestTruncateTitle(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"short", "hello", "hello"},
		{"spaces collapse", "  what   is\tmy HbA1c ", "what is my HbA1c"},
		{"first line", "\n\nSummarize this:\nline two\nline three", "Summarize this:"},
		{"word boundary", "Please compare my cholesterol results from January with the ones from June and tell me",
			"Please compare my cholesterol results from January with the…"},
		{"one long word", strings.Repeat("x", 70), strings.Repeat("x", 60) + "…"},
		{"runes not bytes", strings.Repeat("é", 60), strings.Repeat("é", 60)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := truncateTitle(tc.in); got != tc.want {
				t.Errorf("truncateTitle(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
