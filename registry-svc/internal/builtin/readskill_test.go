package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
