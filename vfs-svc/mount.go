package vfssvc

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/wire"
)

// skillMount serves /skills/<skill>/... read-only from SKILL_DIRS: each
// direct subfolder holding a SKILL.md is one skill, and the first folder
// in SKILL_DIRS wins a name. Files are opened through os.Root, so neither
// a path nor a symbolic link can leave a skill's folder. Folders are read
// on each request, so skills added while running appear at once.
type skillMount struct {
	dirs    []string
	maxFile int64
}

// skills maps each skill name to its folder.
func (m *skillMount) skills() map[string]string {
	out := map[string]string{}
	for _, root := range m.dirs {
		entries, err := os.ReadDir(root)
		if err != nil {
			continue
		}
		for _, e := range entries {
			dir := filepath.Join(root, e.Name())
			if _, taken := out[e.Name()]; taken {
				continue
			}
			if st, err := os.Stat(filepath.Join(dir, "SKILL.md")); err == nil && st.Mode().IsRegular() {
				out[e.Name()] = dir
			}
		}
	}
	return out
}

// open splits a /skills path into the skill's file system and the path
// inside it ("." for the skill's folder). It returns a nil fs for /skills
// itself. The caller closes the root.
func (m *skillMount) open(p string) (*os.Root, string, error) {
	rest := strings.TrimPrefix(strings.TrimPrefix(p, strings.TrimSuffix(files.SkillsRoot, "/")), "/")
	if rest == "" {
		return nil, "", nil
	}
	name, inner, _ := strings.Cut(rest, "/")
	dir, ok := m.skills()[name]
	if !ok {
		return nil, "", wire.Errorf(wire.NotFound, "no skill %q", name)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, "", wire.Errorf(wire.NotFound, "skill %q cannot be opened", name)
	}
	if inner == "" {
		inner = "."
	}
	return root, inner, nil
}

func mountErr(p string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return wire.Errorf(wire.NotFound, "%s does not exist", p)
	}
	return wire.Errorf(wire.NotFound, "%s cannot be read", p)
}

func mountInfo(p string, st fs.FileInfo) files.FileInfo {
	fi := files.FileInfo{Path: p, IsDir: st.IsDir(), ReadOnly: true}
	if !st.IsDir() {
		fi.Size = st.Size()
		mod := st.ModTime().UTC()
		fi.Modified = &mod
	}
	return fi
}

func (m *skillMount) stat(p string) (*files.FileInfo, error) {
	root, inner, err := m.open(p)
	if err != nil {
		return nil, err
	}
	if root == nil {
		return &files.FileInfo{Path: p, IsDir: true, ReadOnly: true}, nil
	}
	defer root.Close()
	st, err := fs.Stat(root.FS(), inner)
	if err != nil {
		return nil, mountErr(p, err)
	}
	fi := mountInfo(p, st)
	return &fi, nil
}

func (m *skillMount) ls(p string) ([]files.FileInfo, error) {
	root, inner, err := m.open(p)
	if err != nil {
		return nil, err
	}
	var out []files.FileInfo
	if root == nil {
		for name := range m.skills() {
			out = append(out, files.FileInfo{Path: path.Join(p, name), IsDir: true, ReadOnly: true})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
		return out, nil
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), inner)
	if err != nil {
		if st, serr := fs.Stat(root.FS(), inner); serr == nil && !st.IsDir() {
			return nil, wire.Errorf(wire.NotDir, "%s is not a directory", p)
		}
		return nil, mountErr(p, err)
	}
	for _, e := range entries {
		st, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, mountInfo(path.Join(p, e.Name()), st))
	}
	return out, nil
}

func (m *skillMount) read(p string) (string, *files.FileInfo, error) {
	root, inner, err := m.open(p)
	if err != nil {
		return "", nil, err
	}
	if root == nil {
		return "", nil, wire.Errorf(wire.IsDir, "%s is a directory", p)
	}
	defer root.Close()
	st, err := fs.Stat(root.FS(), inner)
	if err != nil {
		return "", nil, mountErr(p, err)
	}
	if st.IsDir() {
		return "", nil, wire.Errorf(wire.IsDir, "%s is a directory", p)
	}
	if st.Size() > m.maxFile {
		return "", nil, wire.Errorf(wire.ResourceExhausted, "%s is larger than %d bytes", p, m.maxFile)
	}
	data, err := fs.ReadFile(root.FS(), inner)
	if err != nil {
		return "", nil, mountErr(p, err)
	}
	fi := mountInfo(p, st)
	return string(data), &fi, nil
}

// walk calls fn for every regular file at or below p, in path order.
func (m *skillMount) walk(p string, fn func(fi files.FileInfo, open func() (string, error)) error) error {
	var names []string
	if under(p, files.SkillsRoot) && p != strings.TrimSuffix(files.SkillsRoot, "/") {
		names = []string{p}
	} else {
		for name := range m.skills() {
			names = append(names, files.SkillsRoot+name)
		}
		sort.Strings(names)
	}
	for _, start := range names {
		root, inner, err := m.open(start)
		if err != nil {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(start, files.SkillsRoot), "/")
		werr := fs.WalkDir(root.FS(), inner, func(rel string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			st, err := d.Info()
			if err != nil || st.Size() > m.maxFile {
				return nil
			}
			vp := path.Join(files.SkillsRoot, name, rel)
			return fn(mountInfo(vp, st), func() (string, error) {
				b, err := fs.ReadFile(root.FS(), rel)
				return string(b), err
			})
		})
		root.Close()
		if werr != nil {
			return werr
		}
	}
	return nil
}
