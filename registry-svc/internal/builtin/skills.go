package builtin

import (
	"io/fs"
	"mime"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"
)

// maxSkillFiles bounds the files listed per skill, so that a skill folder
// holding a data set cannot flood resources/list.
const maxSkillFiles = 200

// SkillDir is one skill of SKILL_DIRS: its name (frontmatter name, else
// its folder's), its frontmatter description and its folder.
type SkillDir struct {
	Name, Description, Dir string
}

// Skills returns the skills of dirs, sorted by name, each once: the first
// SKILL_DIRS entry wins a name, as for read_skill.
func Skills(dirs []string) []SkillDir {
	var out []SkillDir
	seen := map[string]bool{}
	eachSkill(dirs, nil, nil, func(folder, dir, name, desc string) {
		if name == "" {
			name = folder
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, SkillDir{Name: name, Description: desc, Dir: dir})
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// SkillFileInfo is one file of a skill, its path relative to the skill's
// folder with forward slashes.
type SkillFileInfo struct {
	Path     string
	MimeType string
	Size     int64
}

// SkillFiles lists the regular files of a skill's folder (hidden ones and
// files over 1 MiB left out, at most 200), SKILL.md first, then by path.
// Symbolic links are not followed: what is listed is what ReadSkillFile
// reads.
func SkillFiles(dir string) []SkillFileInfo {
	var out []SkillFileInfo
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") && p != dir {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Size() > maxSkillFileBytes {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		out = append(out, SkillFileInfo{Path: rel, MimeType: MimeType(rel, nil), Size: info.Size()})
		if len(out) >= maxSkillFiles {
			return filepath.SkipAll
		}
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool {
		if (out[i].Path == "SKILL.md") != (out[j].Path == "SKILL.md") {
			return out[i].Path == "SKILL.md"
		}
		return out[i].Path < out[j].Path
	})
	return out
}

// MimeType names a skill file's media type by its extension (Markdown as
// text/markdown); without one it is text/plain for UTF-8 content and
// application/octet-stream otherwise (data nil: unknown, text assumed).
func MimeType(rel string, data []byte) string {
	ext := strings.ToLower(path.Ext(rel))
	if ext == ".md" || ext == ".markdown" {
		return "text/markdown"
	}
	if t := mime.TypeByExtension(ext); t != "" && ext != "" {
		return t
	}
	if data != nil && !utf8.Valid(data) {
		return "application/octet-stream"
	}
	return "text/plain"
}
