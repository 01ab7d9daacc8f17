package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// maxSkillFileBytes bounds what read_skill returns, so that one resource
// cannot flood a model's context.
const maxSkillFileBytes = 1 << 20

// ReadSkill returns the read_skill tool (registry-svc/design.md "Built-in
// tools", agent-svc/design.md "Skills"): it returns one file of a skill,
// SKILL.md by default. A skill is a direct subfolder of a SKILL_DIRS entry that
// holds a SKILL.md; it is named by its frontmatter name or, failing that, its
// folder name. The path must stay inside the skill's folder.
func ReadSkill() *Tool {
	return &Tool{
		Name: "read_skill",
		Description: "Read a skill's instructions or one of its resource files. " +
			"Call it with the skill's name to get its SKILL.md, then with path set to a file the SKILL.md mentions.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"name":{"type":"string","description":"The skill's name, as listed among the available skills."},` +
			`"path":{"type":"string","default":"SKILL.md","description":"A file inside the skill's folder, relative to it."}},` +
			`"required":["name"]}`),
		Annotations: json.RawMessage(`{"readOnlyHint":true,"openWorldHint":false}`),
		Call:        readSkill,
	}
}

type readSkillArgs struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

func readSkill(_ context.Context, req *Request) (any, error) {
	var args readSkillArgs
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	if args.Path == "" {
		args.Path = "SKILL.md"
	}
	skills := findSkills(req.Deps.SkillDirs)
	dir, ok := skills[args.Name]
	if !ok {
		names := make([]string, 0, len(skills))
		for n := range skills {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, Failf("no skill named %q; available skills: %s", args.Name, strings.Join(names, ", "))
	}
	data, err := readInside(dir, args.Path)
	if err != nil {
		return nil, err
	}
	return data, nil
}

// findSkills maps each skill name to its folder. The first SKILL_DIRS entry
// wins a name; a folder is reachable by its frontmatter name and its own name.
func findSkills(dirs []string) map[string]string {
	out := map[string]string{}
	eachSkill(dirs, func(folder, dir, name, _ string) {
		for _, n := range []string{name, folder} {
			if _, taken := out[n]; n != "" && !taken {
				out[n] = dir
			}
		}
	})
	return out
}

// eachSkill calls fn for every skill folder of dirs, in SKILL_DIRS order:
// a direct subfolder holding a SKILL.md, with its frontmatter's name ("" if
// none) and description.
func eachSkill(dirs []string, fn func(folder, dir, name, desc string)) {
	for _, root := range dirs {
		entries, err := os.ReadDir(root)
		if err != nil {
			continue
		}
		for _, e := range entries {
			dir := filepath.Join(root, e.Name())
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				continue
			}
			head, err := os.ReadFile(filepath.Join(dir, "SKILL.md"))
			if err != nil {
				continue
			}
			name, desc := frontmatter(head)
			fn(e.Name(), dir, name, desc)
		}
	}
}

// frontmatter returns the name and description fields of a SKILL.md's YAML
// frontmatter.
func frontmatter(doc []byte) (name, description string) {
	doc = bytes.TrimPrefix(doc, []byte("\ufeff"))
	if !bytes.HasPrefix(doc, []byte("---")) {
		return "", ""
	}
	rest := doc[3:]
	end := bytes.Index(rest, []byte("\n---"))
	if end < 0 {
		return "", ""
	}
	var fm struct {
		Name        string `yaml:"name"`
		Description string `yaml:"description"`
	}
	if yaml.Unmarshal(rest[:end], &fm) != nil {
		return "", ""
	}
	return strings.TrimSpace(fm.Name), strings.TrimSpace(fm.Description)
}

// readInside reads the text file rel inside dir, refusing any path
// (including through a symbolic link) that leaves dir.
func readInside(dir, rel string) (string, error) {
	buf, err := ReadSkillFile(dir, rel)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(buf) {
		return "", Failf("%q is not a text file", rel)
	}
	return string(buf), nil
}

// ReadSkillFile reads the file rel inside a skill's folder dir, refusing
// any path (including through a symbolic link) that leaves dir, folders and
// files over 1 MiB. Its errors are tool failures (Failf) a caller can show.
func ReadSkillFile(dir, rel string) ([]byte, error) {
	if filepath.IsAbs(rel) || !filepath.IsLocal(rel) {
		return nil, Failf("path %q must be relative and stay inside the skill's folder", rel)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, Failf("opening the skill's folder failed")
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, Failf("the skill has no file %q", rel)
		}
		return nil, Failf("path %q must stay inside the skill's folder", rel)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, Failf("%q is a folder, not a file", rel)
	}
	if st.Size() > maxSkillFileBytes {
		return nil, Failf("%q is larger than %d bytes", rel, maxSkillFileBytes)
	}
	buf, err := io.ReadAll(io.LimitReader(f, maxSkillFileBytes))
	if err != nil {
		return nil, fmt.Errorf("reading skill file: %w", err)
	}
	return buf, nil
}
