package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadSkill(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(first, "lab-report", "SKILL.md"), "---\nname: lab-reports\ndescription: Read lab reports.\n---\nBody one.\n")
	writeFile(t, filepath.Join(first, "lab-report", "ref", "ranges.md"), "Ranges.\n")
	writeFile(t, filepath.Join(first, "not-a-skill", "README.md"), "no SKILL.md here\n")
	writeFile(t, filepath.Join(second, "lab-report", "SKILL.md"), "---\nname: lab-reports\ndescription: Shadowed.\n---\nBody two.\n")
	writeFile(t, filepath.Join(second, "sleep", "SKILL.md"), "---\nname: sleep\ndescription: Sleep.\n---\nSleep body.\n")
	writeFile(t, filepath.Join(first, "secret.txt"), "outside the skill\n")
	if err := os.Symlink(filepath.Join(first, "secret.txt"), filepath.Join(first, "lab-report", "leak.md")); err != nil {
		t.Fatal(err)
	}
	deps := &Deps{SkillDirs: []string{first, second, filepath.Join(first, "missing")}}
	tests := []struct {
		name, args string
		want       string // result text, or the ToolError message part
		fail       bool
	}{
		{"by frontmatter name, first folder wins", `{"name":"lab-reports"}`, "Body one.", false},
		{"by folder name", `{"name":"lab-report"}`, "Body one.", false},
		{"resource", `{"name":"lab-reports","path":"ref/ranges.md"}`, "Ranges.", false},
		{"second folder", `{"name":"sleep"}`, "Sleep body.", false},
		{"unknown skill lists the available ones", `{"name":"nope"}`, "available skills: lab-report, lab-reports, sleep", true},
		{"folder without SKILL.md is no skill", `{"name":"not-a-skill"}`, "no skill named", true},
		{"dot-dot escape", `{"name":"sleep","path":"../lab-report/SKILL.md"}`, "inside the skill's folder", true},
		{"absolute path", `{"name":"sleep","path":"/etc/passwd"}`, "inside the skill's folder", true},
		{"symlink escape", `{"name":"lab-reports","path":"leak.md"}`, "inside the skill's folder", true},
		{"missing file", `{"name":"sleep","path":"nope.md"}`, "has no file", true},
		{"a folder", `{"name":"lab-reports","path":"ref"}`, "is a folder", true},
	}
	tool := ReadSkill()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := tool.Call(context.Background(), &Request{Args: json.RawMessage(tt.args), Deps: deps})
			if tt.fail {
				var te *ToolError
				if !errors.As(err, &te) || !strings.Contains(te.Message, tt.want) {
					t.Fatalf("got %v, %v; want a ToolError containing %q", v, err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s, _ := v.(string); !strings.Contains(s, tt.want) {
				t.Errorf("got %q, want it to contain %q", s, tt.want)
			}
		})
	}
}

// read_skill keeps the frontmatters it parsed, and reads a SKILL.md again
// once it changed: a renamed skill is found under its new name only.
func TestFrontmatterMemoSeesChanges(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "folder")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var memo frontmatterMemo
	for _, name := range []string{"first", "second-name", "first"} {
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: "+name+"\n---\nbody\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		// A rewrite within the file system's timestamp resolution keeps
		// the time: move it so that the change is visible to stat.
		later := time.Now().Add(time.Duration(len(name)) * time.Second)
		if err := os.Chtimes(filepath.Join(dir, "SKILL.md"), later, later); err != nil {
			t.Fatal(err)
		}
		got := findSkills([]string{root}, nil, &memo)
		if got[name] != dir || got["folder"] != dir || len(got) != 2 {
			t.Errorf("after naming the skill %q: %v", name, got)
		}
	}
}

// read_skill keeps the listing of a SKILL_DIRS folder while the folder's
// time stays the same, and lists it again once a skill folder was added or
// removed; a listing of a folder changed less than racyListing ago is not
// kept.
func TestFolderMemoSeesChanges(t *testing.T) {
	root := t.TempDir()
	addSkill := func(name string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name, "SKILL.md"), []byte("---\nname: "+name+"\n---\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setTime := func(at time.Time) {
		t.Helper()
		if err := os.Chtimes(root, at, at); err != nil {
			t.Fatal(err)
		}
	}
	names := func(m map[string]string) string {
		var out []string
		for n := range m {
			out = append(out, n)
		}
		sort.Strings(out)
		return strings.Join(out, ",")
	}
	var folders folderMemo
	var memo frontmatterMemo
	// racy is less than racyListing before any listing (after, even, as
	// with a clock set back), however slow the machine.
	old, racy := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	steps := []struct {
		name   string
		change func()
		want   string
	}{
		{name: "listed", change: func() { addSkill("a"); setTime(old) }, want: "a"},
		{name: "kept while the time stays", change: func() { addSkill("hidden"); setTime(old) }, want: "a"},
		{name: "added", change: func() { addSkill("b") }, want: "a,b,hidden"},
		{name: "changed lately", change: func() { addSkill("c"); setTime(racy) }, want: "a,b,c,hidden"},
		{name: "changed lately is listed again", change: func() { addSkill("d"); setTime(racy) }, want: "a,b,c,d,hidden"},
		{name: "removed", change: func() {
			if err := os.RemoveAll(filepath.Join(root, "a")); err != nil {
				t.Fatal(err)
			}
		}, want: "b,c,d,hidden"},
	}
	for _, st := range steps {
		st.change()
		if got := names(findSkills([]string{root}, &folders, &memo)); got != st.want {
			t.Fatalf("%s: skills %s, want %s", st.name, got, st.want)
		}
	}
}

// read_skill answers a SKILL.md from the text it kept while the file keeps
// its size and time, reads it again once either changed, and keeps no text
// of a file changed less than racyListing before it was read.
func TestSkillTextKept(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "s", "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(body string, at time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	old, racy := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	req := &Request{Args: json.RawMessage(`{"name":"s"}`), Deps: &Deps{SkillDirs: []string{root}}}
	steps := []struct {
		name string
		body string
		at   time.Time
		want string
	}{
		{name: "read", body: "one\n", at: old, want: "one\n"},
		{name: "kept while size and time stay", body: "two\n", at: old, want: "one\n"},
		{name: "read again once the time changed", body: "two\n", at: old.Add(time.Second), want: "two\n"},
		{name: "changed lately", body: "tri\n", at: racy, want: "tri\n"},
		{name: "changed lately is not kept", body: "for\n", at: racy, want: "for\n"},
	}
	for _, st := range steps {
		write(st.body, st.at)
		v, err := readSkill(context.Background(), req)
		if err != nil || v != st.want {
			t.Fatalf("%s: %q %v, want %q", st.name, v, err, st.want)
		}
	}
}
