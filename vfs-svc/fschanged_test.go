package vfssvc

import (
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/vfs/files"
)

// TestFilesChanged: every committed change of an account's /memories
// announces its paths on that account's subject; session files and failed
// changes announce nothing.
func TestFilesChanged(t *testing.T) {
	e := start(t, nil)
	acct := e.account(t)
	events := make(chan []string, 16)
	sub, err := e.client.Conn().Subscribe(files.Changed.Subject, func(m *nats.Msg) {
		if ev, err := files.Changed.Decode(m); err == nil && files.Changed.Token(m.Subject) == acct {
			events <- ev.Paths
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.client.Conn().Flush())
	mem := files.Scope{AccountID: acct}
	sess := files.Scope{AccountID: acct, SessionID: "s1"}
	c := ctx(t)
	mustWrite(t, e, sess, "/notes.md", "session file")
	_, err = e.fs.Write(c, &files.WriteRequest{Scope: mem, Path: "/memories/a.md", Content: "one"})
	must(err)
	_, err = e.fs.Write(c, &files.WriteRequest{Scope: mem, Path: "/memories/a.md", Content: "again"}) // exists: refused
	wantCode(t, err, "already_exists")
	_, err = e.fs.Edit(c, &files.EditRequest{Scope: mem, Path: "/memories/a.md", Old: "one", New: "two"})
	must(err)
	_, err = e.fs.Move(c, &files.MoveRequest{Scope: mem, From: "/memories/a.md", To: "/memories/dir/b.md"})
	must(err)
	_, err = e.fs.Delete(c, &files.DeleteRequest{Scope: mem, Path: "/memories/dir", Recursive: true})
	must(err)
	for _, want := range [][]string{
		{"/memories/a.md"},
		{"/memories/a.md"},
		{"/memories/a.md", "/memories/dir/b.md"},
		{"/memories/dir"},
	} {
		select {
		case got := <-events:
			if !slices.Equal(got, want) {
				t.Fatalf("event %v, want %v", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no event for %v", want)
		}
	}
}
