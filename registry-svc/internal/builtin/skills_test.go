package builtin

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestMimeType(t *testing.T) {
	tests := []struct {
		path string
		data []byte
		want string
	}{
		{"SKILL.md", nil, "text/markdown"},
		{"logo.png", []byte{0x89, 'P'}, "image/png"},
		{"script", []byte("#!/bin/sh\n"), "text/plain"},
		{"blob", []byte{0xff, 0x00}, "application/octet-stream"},
	}
	for _, tt := range tests {
		if got := MimeType(tt.path, tt.data); got != tt.want {
			t.Errorf("MimeType(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

// TestSkillFiles: SKILL.md first, subfolders included, hidden files, links
// and other skills' folders left out; the first SKILL_DIRS entry wins a name.
func TestSkillFiles(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	write := func(path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(a, "one", "SKILL.md"), "---\nname: first\ndescription: D\n---\nx")
	write(filepath.Join(a, "one", "a", "z.txt"), "z")
	write(filepath.Join(a, "one", ".git", "config"), "hidden")
	write(filepath.Join(b, "two", "SKILL.md"), "---\nname: first\n---\nshadowed")
	write(filepath.Join(b, "three", "SKILL.md"), "no frontmatter")
	if err := os.Symlink("/etc/passwd", filepath.Join(a, "one", "passwd")); err != nil {
		t.Fatal(err)
	}
	skills := Skills([]string{a, b})
	if got := fmt.Sprint(skills); got != fmt.Sprintf("[{first D %s} {three  %s}]", filepath.Join(a, "one"), filepath.Join(b, "three")) {
		t.Fatalf("Skills = %s", got)
	}
	files := SkillFiles(skills[0].Dir)
	if got := fmt.Sprint(files); got != "[{SKILL.md text/markdown 36} {a/z.txt text/plain; charset=utf-8 1}]" {
		t.Errorf("SkillFiles = %s", got)
	}
}
