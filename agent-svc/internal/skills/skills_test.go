package skills

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/services/servicetest"
)

func TestLoad(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	write := func(dir, name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if content != "" {
			if err := os.WriteFile(filepath.Join(dir, name, "SKILL.md"), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(a, "zeta", "---\nname: zeta\ndescription: Last one.\n---\nbody")
	write(a, "alpha", "---\r\nname: alpha\r\ndescription: First one.\r\n---\r\nbody")
	write(a, "nofront", "just text")
	write(a, "noname", "---\ndescription: x\n---\n")
	write(a, "badyaml", "---\nname: [\n---\n")
	write(a, "empty", "")
	write(a, "long", "---\nname: long\ndescription: "+strings.Repeat("é", 2000)+"\n---\n")
	write(b, "zeta2", "---\nname: zeta\ndescription: Shadowed.\n---\n")
	got := Load([]string{a, b, filepath.Join(a, "missing")}, servicetest.Logger(t))
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "alpha,long,zeta" {
		t.Fatalf("skills %v", names)
	}
	if got[2].Description != "Last one." {
		t.Errorf("the first folder must win a name: %+v", got[2])
	}
	if n := len(got[1].Name) + len(got[1].Description); n > MaxFrontmatter+len("…") || !strings.HasSuffix(got[1].Description, "…") {
		t.Errorf("long frontmatter not truncated: %d bytes", n)
	}
}

func TestShippedSkills(t *testing.T) {
	got := Load([]string{"../../../skills"}, servicetest.Logger(t))
	if len(got) == 0 || got[0].Name != "lab-results-review" {
		t.Fatalf("shipped skills %+v", got)
	}
}
