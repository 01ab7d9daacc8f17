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
	"sync"
	"time"
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
	skills := findSkills(req.Deps.SkillDirs, &req.Deps.skillFolders, &req.Deps.frontmatters)
	dir, ok := skills[args.Name]
	if !ok {
		names := make([]string, 0, len(skills))
		for n := range skills {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, Failf("no skill named %q; available skills: %s", args.Name, strings.Join(names, ", "))
	}
	if args.Path == skillFile {
		// The SKILL.md that findSkills just checked, when unchanged
		// since it was last read.
		if text, ok := req.Deps.frontmatters.text(filepath.Join(dir, skillFile)); ok {
			return text, nil
		}
	}
	data, st, err := readInside(dir, args.Path)
	if err != nil {
		return nil, err
	}
	if args.Path == skillFile {
		req.Deps.frontmatters.keepText(filepath.Join(dir, skillFile), st, data)
	}
	return data, nil
}

// skillFile is the file that makes a folder a skill, and the one
// read_skill returns by default.
const skillFile = "SKILL.md"

// maxKeptSkillText bounds the SKILL.md texts frontmatterMemo keeps.
const maxKeptSkillText = 64 << 10

// findSkills maps each skill name to its folder. The first SKILL_DIRS entry
// wins a name; a folder is reachable by its frontmatter name and its own name.
func findSkills(dirs []string, folders *folderMemo, memo *frontmatterMemo) map[string]string {
	out := map[string]string{}
	eachSkill(dirs, folders, memo, func(folder, dir, name, _ string) {
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
// none) and description. folders and memo, when set, keep the listings and
// the frontmatters read.
func eachSkill(dirs []string, folders *folderMemo, memo *frontmatterMemo, fn func(folder, dir, name, desc string)) {
	for _, root := range dirs {
		for _, e := range folders.list(root) {
			dir := filepath.Join(root, e)
			// A SKILL.md that can be read makes dir a folder: an entry
			// that is no folder (or no longer one) fails here.
			name, desc, ok := memo.read(filepath.Join(dir, skillFile))
			if !ok {
				continue
			}
			fn(e, dir, name, desc)
		}
	}
}

// racyListing is how long after a folder's last change its listing is not
// kept: a change within the file system's timestamp resolution of the
// previous one may leave the modification time as it was.
const racyListing = time.Second

// folderMemo keeps the listing of each SKILL_DIRS entry while its
// modification time stays the same: read_skill resolves a name on every
// call, and listing the folder (open, two getdents, close) and a stat per
// entry cost more than the file it then reads (issue 20). Adding, removing
// or renaming an entry changes the folder's time; what happens inside a
// skill's folder is seen through its SKILL.md (frontmatterMemo).
type folderMemo struct {
	mu       sync.Mutex
	listings map[string]memoListing
}

// memoListing is one folder's candidate skill folders: its entries but
// regular files, in directory order, with the time they were listed at.
type memoListing struct {
	mod     time.Time
	entries []string
}

// list returns the entries of root that may be skill folders. A nil memo
// lists every time.
func (m *folderMemo) list(root string) []string {
	if m == nil {
		return listEntries(root)
	}
	st, err := os.Stat(root)
	if err != nil {
		return nil
	}
	m.mu.Lock()
	hit, found := m.listings[root]
	m.mu.Unlock()
	if found && hit.mod.Equal(st.ModTime()) {
		return hit.entries
	}
	// Listed after the stat: a change in between is listed already, and
	// the next call sees a new time and lists again.
	entries := listEntries(root)
	if time.Since(st.ModTime()) > racyListing {
		m.mu.Lock()
		if m.listings == nil {
			m.listings = map[string]memoListing{}
		}
		m.listings[root] = memoListing{mod: st.ModTime(), entries: entries}
		m.mu.Unlock()
	}
	return entries
}

// listEntries lists root's entries but regular files, which are no skill
// folders (symbolic links may lead to folders).
func listEntries(root string) []string {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		if !e.Type().IsRegular() {
			out = append(out, e.Name())
		}
	}
	return out
}

// frontmatterMemo keeps the frontmatter of each SKILL.md read, by path,
// with the file's size and modification time: read_skill resolves a name
// on every call, and reading and parsing the YAML of every skill each time
// was most of a read_skill call (issue 20). A changed file is read again.
// It also keeps the text read_skill returned for a SKILL.md (up to
// maxKeptSkillText), so that the stat the name's resolution made anyway
// also validates the answer, which then needs no open and read.
type frontmatterMemo struct {
	mu    sync.Mutex
	files map[string]memoFrontmatter
}

// memoFrontmatter is one SKILL.md's frontmatter and the file it came from.
type memoFrontmatter struct {
	size       int64
	mod        time.Time
	name, desc string
	// text is the file's text once read_skill returned it, "" before.
	text string
}

// read returns the frontmatter of the SKILL.md at path; ok is false when
// it cannot be read. A nil memo reads every time.
func (m *frontmatterMemo) read(path string) (name, desc string, ok bool) {
	if m == nil {
		head, err := os.ReadFile(path)
		if err != nil {
			return "", "", false
		}
		name, desc = frontmatter(head)
		return name, desc, true
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", "", false
	}
	m.mu.Lock()
	hit, found := m.files[path]
	m.mu.Unlock()
	if found && hit.size == st.Size() && hit.mod.Equal(st.ModTime()) {
		return hit.name, hit.desc, true
	}
	head, err := os.ReadFile(path)
	if err != nil {
		return "", "", false
	}
	name, desc = frontmatter(head)
	m.mu.Lock()
	if m.files == nil {
		m.files = map[string]memoFrontmatter{}
	}
	m.files[path] = memoFrontmatter{size: st.Size(), mod: st.ModTime(), name: name, desc: desc}
	m.mu.Unlock()
	return name, desc, true
}

// text returns the kept text of the SKILL.md at path. It is only as
// fresh as the last read (findSkills stats every SKILL.md first).
func (m *frontmatterMemo) text(path string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	hit, found := m.files[path]
	return hit.text, found && hit.text != ""
}

// keepText keeps text, read from the SKILL.md at path when it had the
// size and time of st, if that is still the file the memo knows. A file
// changed less than racyListing before it was read is not kept: a second
// change within the timestamp resolution could keep its size and time.
func (m *frontmatterMemo) keepText(path string, st os.FileInfo, text string) {
	if len(text) > maxKeptSkillText || text == "" || time.Since(st.ModTime()) <= racyListing {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if hit, found := m.files[path]; found && hit.size == st.Size() && hit.mod.Equal(st.ModTime()) {
		hit.text = text
		m.files[path] = hit
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
func readInside(dir, rel string) (string, os.FileInfo, error) {
	buf, st, err := readSkillFile(dir, rel)
	if err != nil {
		return "", nil, err
	}
	if !utf8.Valid(buf) {
		return "", nil, Failf("%q is not a text file", rel)
	}
	return string(buf), st, nil
}

// ReadSkillFile reads the file rel inside a skill's folder dir, refusing
// any path (including through a symbolic link) that leaves dir, folders and
// files over 1 MiB. Its errors are tool failures (Failf) a caller can show.
func ReadSkillFile(dir, rel string) ([]byte, error) {
	buf, _, err := readSkillFile(dir, rel)
	return buf, err
}

// readSkillFile is ReadSkillFile, also returning the file's information.
func readSkillFile(dir, rel string) ([]byte, os.FileInfo, error) {
	if filepath.IsAbs(rel) || !filepath.IsLocal(rel) {
		return nil, nil, Failf("path %q must be relative and stay inside the skill's folder", rel)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, Failf("opening the skill's folder failed")
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, Failf("the skill has no file %q", rel)
		}
		return nil, nil, Failf("path %q must stay inside the skill's folder", rel)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.IsDir() {
		return nil, nil, Failf("%q is a folder, not a file", rel)
	}
	if st.Size() > maxSkillFileBytes {
		return nil, nil, Failf("%q is larger than %d bytes", rel, maxSkillFileBytes)
	}
	buf, err := io.ReadAll(io.LimitReader(f, maxSkillFileBytes))
	if err != nil {
		return nil, nil, fmt.Errorf("reading skill file: %w", err)
	}
	return buf, st, nil
}
