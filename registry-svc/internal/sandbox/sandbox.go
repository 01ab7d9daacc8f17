// Package sandbox confines the Python tool host (design.md): each host runs
// under a small launcher, a hidden entry of our own binary, that the parent
// starts in fresh user and PID namespaces as an unprivileged uid and that
// applies Landlock before it execs Python. Tool code then sees no other
// process, reads only the Python installation, the tool folders and a few
// system files, and writes only its own temp dir; the network stays open.
package sandbox

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Mode is the TOOL_SANDBOX setting.
type Mode string

// The TOOL_SANDBOX values.
const (
	// Required refuses to start when the host cannot sandbox tools.
	Required Mode = "required"
	// Auto sandboxes when the host can, and says so in one log line when
	// it cannot.
	Auto Mode = "auto"
	// Off runs tools without a sandbox.
	Off Mode = "off"
)

// launcherFlag is argv[1] of a launcher process. It starts with a dash so
// that a binary without the Main hook (a test binary without TestMain)
// fails on an unknown flag instead of running as something else.
const launcherFlag = "-mirobody-tool-sandbox"

// Grant is one TOOL_PATHS entry: a folder a tool module needs.
type Grant struct {
	// Module is the tool file's module name (its file name without .py).
	Module string
	// Path is the absolute folder or file.
	Path string
	// Write grants read-write access; otherwise read-only.
	Write bool
}

var moduleName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParseGrants parses TOOL_PATHS entries, each module=/abs/path with an
// optional :ro (the default) or :rw suffix.
func ParseGrants(entries []string) ([]Grant, error) {
	var out []Grant
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		mod, path, ok := strings.Cut(e, "=")
		if !ok || !moduleName.MatchString(mod) {
			return nil, fmt.Errorf("%q is not module=/absolute/path[:ro|:rw]", e)
		}
		g := Grant{Module: mod, Path: path}
		if p, ok := strings.CutSuffix(path, ":rw"); ok {
			g.Path, g.Write = p, true
		} else if p, ok := strings.CutSuffix(path, ":ro"); ok {
			g.Path = p
		}
		if !filepath.IsAbs(g.Path) {
			return nil, fmt.Errorf("%q: the path must be absolute", e)
		}
		g.Path = filepath.Clean(g.Path)
		out = append(out, g)
	}
	return out, nil
}

// systemRO are read-only for every tool host: shared libraries, CA
// certificates and the resolver and locale files Python and its ssl and
// socket modules read. Missing ones are skipped. Nothing here holds a
// secret; /etc as a whole is not listed, since it can (shadow, configs).
var systemRO = []string{
	"/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin",
	"/etc/ssl", "/etc/pki", "/etc/ca-certificates", "/etc/resolv.conf", "/etc/hosts",
	"/etc/nsswitch.conf", "/etc/gai.conf", "/etc/host.conf", "/etc/services", "/etc/protocols",
	"/etc/localtime", "/etc/timezone", "/etc/mime.types", "/etc/passwd", "/etc/group",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
	"/dev/urandom", "/dev/random", "/dev/zero", "/sys/devices/system/cpu",
}

// systemRW are writable for every tool host.
var systemRW = []string{"/dev/null"}

// spec is what the parent tells the launcher, as JSON in argv[2].
type spec struct {
	// Exec is the interpreter to exec, absolute.
	Exec string `json:"exec"`
	// Args is its argv, starting with argv[0].
	Args []string `json:"args"`
	// RO and RW are the paths Landlock allows; missing ones are skipped.
	RO []string `json:"ro"`
	RW []string `json:"rw"`
}

// Options configures New.
type Options struct {
	// Python is the interpreter as configured (a name on PATH or a path).
	Python string
	// Env is the tool host environment; the interpreter is asked for its
	// paths under it, so that PYTHONPATH and venvs count.
	Env []string
	// Dirs are the tool folders, read-only for tools.
	Dirs []string
	// Grants are the TOOL_PATHS entries.
	Grants []Grant
	// Launcher is the binary that holds the launcher (calls Main first
	// thing); empty means this one (/proc/self/exe).
	Launcher string
}

// Sandbox starts tool hosts confined. It is safe for concurrent use.
type Sandbox struct {
	launcher string
	python   string
	ro, rw   []string
	isolate  isolation
}

// Python is the interpreter the sandbox execs: the resolved sys.executable,
// which a pyenv shim or a name on PATH stands for.
func (s *Sandbox) Python() string { return s.python }

// Describe says which layers are in force, for the start-up log line.
func (s *Sandbox) Describe() string { return s.isolate.describe() }

// New resolves the interpreter's paths and probes that a confined
// interpreter runs on this host; the error says why not.
func New(ctx context.Context, opts Options) (*Sandbox, error) {
	python, roots, err := pythonPaths(ctx, opts.Python, opts.Env)
	if err != nil {
		return nil, err
	}
	s := &Sandbox{launcher: cmp.Or(opts.Launcher, "/proc/self/exe"), python: python}
	s.ro = append(append(append(s.ro, systemRO...), roots...), opts.Dirs...)
	s.rw = append(s.rw, systemRW...)
	for _, g := range opts.Grants {
		if g.Write {
			s.rw = append(s.rw, g.Path)
		} else {
			s.ro = append(s.ro, g.Path)
		}
	}
	if err := s.probe(ctx, opts.Env); err != nil {
		return nil, err
	}
	return s, nil
}

// pythonPaths asks the interpreter (not yet confined: no tool code runs)
// for its executable and the folders it imports from.
func pythonPaths(ctx context.Context, python string, env []string) (string, []string, error) {
	const q = "import sys, json; print(json.dumps([sys.executable, sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix] + sys.path))"
	cmd := exec.CommandContext(ctx, python, "-c", q)
	cmd.Env = append(make([]string, 0, len(env)), env...)
	cmd.Dir = os.TempDir()
	out, err := cmd.Output()
	if err != nil {
		return "", nil, fmt.Errorf("asking %s for its paths: %w", python, err)
	}
	var paths []string
	if err := json.Unmarshal(out, &paths); err != nil || len(paths) < 5 || !filepath.IsAbs(paths[0]) {
		return "", nil, fmt.Errorf("asking %s for its paths: unexpected answer %q", python, out)
	}
	var roots []string
	for _, p := range paths[1:] {
		// "" is the current folder, which a host does not import from.
		if !filepath.IsAbs(p) {
			continue
		}
		if filepath.Clean(p) == "/" {
			return "", nil, fmt.Errorf("%s imports from / (PYTHONPATH?), which would open the whole filesystem to tools", python)
		}
		roots = append(roots, p)
	}
	if real, err := filepath.EvalSymlinks(paths[0]); err == nil {
		roots = append(roots, filepath.Dir(real))
	}
	return paths[0], roots, nil
}

// probe runs `python -c pass` the way a host runs, so that every layer and
// every path the interpreter needs is checked before a tool is loaded. The
// strongest isolation that works is kept.
func (s *Sandbox) probe(ctx context.Context, env []string) error {
	var errs []error
	for _, iso := range candidates() {
		s.isolate = iso
		err := s.tryOnce(ctx, env)
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", iso.describe(), err))
	}
	if len(errs) == 0 {
		return errors.New("probing the tool sandbox: not supported on this operating system")
	}
	return fmt.Errorf("probing the tool sandbox: %w", errors.Join(errs...))
}

func (s *Sandbox) tryOnce(ctx context.Context, env []string) error {
	tmp, err := os.MkdirTemp("", "mirobody-sandbox-probe-*")
	if err != nil {
		return fmt.Errorf("creating the probe's temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	cmd, err := s.Command(tmp, env, "-c", "pass")
	if err != nil {
		return err
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the launcher %s: %w", s.launcher, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Kill() })
	defer stop()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}

// Command returns the confined interpreter with args, in tmp (its only
// writable folder, also its TMPDIR and working directory) and env. The
// caller may set stdio and ExtraFiles, and add to SysProcAttr.
func (s *Sandbox) Command(tmp string, env []string, args ...string) (*exec.Cmd, error) {
	sp := spec{Exec: s.python, Args: append([]string{s.python}, args...), RO: s.ro, RW: append(append([]string(nil), s.rw...), tmp)}
	b, err := json.Marshal(sp)
	if err != nil {
		return nil, fmt.Errorf("encoding the sandbox spec: %w", err)
	}
	cmd := &exec.Cmd{Path: s.launcher, Args: []string{"mirobody-tool-sandbox", launcherFlag, string(b)}, Dir: tmp}
	cmd.Env = append(make([]string, 0, len(env)+1), env...)
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	s.isolate.apply(cmd)
	return cmd, nil
}
