package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
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
		got := findSkills([]string{root}, &memo)
		if got[name] != dir || got["folder"] != dir || len(got) != 2 {
			t.Errorf("after naming the skill %q: %v", name, got)
		}
	}
}
