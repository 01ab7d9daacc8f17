// Package skills reads the frontmatter of the skills in SKILL_DIRS (agent-svc/design.md
// "Skills") for the agent prompts. Bodies and resources are not read here: the
// Deep agent reads them on demand through /skills/ in its filesystem.
package skills

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"

	"gopkg.in/yaml.v3"
)

// MaxFrontmatter is the most frontmatter read per skill; more is truncated
// with a warning.
const MaxFrontmatter = 1024

// Skill is one skill's frontmatter.
type Skill struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
}

// Load returns the skills of dirs, sorted by name; the first folder wins a
// name. Malformed skills are logged and skipped.
func Load(dirs []string, log *slog.Logger) []Skill {
	seen := map[string]bool{}
	var out []Skill
	for _, root := range dirs {
		entries, err := os.ReadDir(root)
		if err != nil {
			continue
		}
		for _, e := range entries {
			file := filepath.Join(root, e.Name(), "SKILL.md")
			data, err := os.ReadFile(file)
			if err != nil {
				continue
			}
			s, err := parse(data, log.With("skill", file))
			if err != nil {
				log.Warn("skipping a malformed skill", "skill", file, "err", err)
				continue
			}
			if seen[s.Name] {
				continue
			}
			seen[s.Name] = true
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func parse(data []byte, log *slog.Logger) (Skill, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	rest, ok := bytes.CutPrefix(data, []byte("---\n"))
	if !ok {
		rest, ok = bytes.CutPrefix(data, []byte("---\r\n"))
	}
	if !ok {
		return Skill{}, fmt.Errorf("SKILL.md does not start with --- frontmatter")
	}
	front, _, ok := bytes.Cut(rest, []byte("\n---"))
	if !ok {
		return Skill{}, fmt.Errorf("the frontmatter has no closing ---")
	}
	var s Skill
	if err := yaml.Unmarshal(front, &s); err != nil {
		return Skill{}, fmt.Errorf("parsing frontmatter: %w", err)
	}
	if s.Name == "" || s.Description == "" {
		return Skill{}, fmt.Errorf("the frontmatter needs name and description")
	}
	if n := len(s.Name) + len(s.Description); n > MaxFrontmatter {
		log.Warn("truncating skill frontmatter over 1 KiB", "bytes", n)
		s.Description = truncate(s.Description, max(MaxFrontmatter-len(s.Name), 0))
	}
	return s, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
