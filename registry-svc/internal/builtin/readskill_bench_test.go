package builtin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkReadSkill is read_skill of a one-line SKILL.md among a few
// skills: the tool of BenchmarkCompare's tools/call rows.
func BenchmarkReadSkill(b *testing.B) {
	root := b.TempDir()
	for _, name := range []string{"bench", "other", "third"} {
		if err := os.MkdirAll(filepath.Join(root, name), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name, "SKILL.md"), []byte("---\nname: "+name+"\n---\nhello\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	// As skills set up more than a moment ago.
	old := time.Now().Add(-time.Hour)
	for _, p := range []string{"bench/SKILL.md", "other/SKILL.md", "third/SKILL.md", "."} {
		if err := os.Chtimes(filepath.Join(root, p), old, old); err != nil {
			b.Fatal(err)
		}
	}
	req := &Request{Args: json.RawMessage(`{"name":"bench"}`), Deps: &Deps{SkillDirs: []string{root}}}
	b.ReportAllocs()
	for b.Loop() {
		if v, err := readSkill(context.Background(), req); err != nil || v != "---\nname: bench\n---\nhello\n" {
			b.Fatalf("%v %v", v, err)
		}
	}
}
