package registrysvc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mirobody/mirobody-go/registry-svc/internal/pyhost"
	"github.com/mirobody/mirobody-go/registry-svc/internal/sandbox"
)

// RunToolSandbox runs the Python tool sandbox's launcher and exits when
// this process was started as one; otherwise it returns at once. Every
// binary that runs registry-svc calls it first thing in main, and every
// test binary that starts Python tools calls it in TestMain: the launcher
// is this binary, re-executed (internal/sandbox/design.md).
func RunToolSandbox() { sandbox.Main() }

// toolSandbox applies TOOL_SANDBOX and TOOL_PATHS: the sandbox the Python
// hosts run in, or nil when it is off, or (auto) unavailable, which is
// logged in one line. In required mode an unavailable sandbox is an error.
func (s *Service) toolSandbox(ctx context.Context) (*sandbox.Sandbox, error) {
	cfg := s.opts.Config
	grants, err := sandbox.ParseGrants(cfg.ToolPaths)
	if err != nil {
		return nil, fmt.Errorf("config: TOOL_PATHS: %w", err)
	}
	mode := sandbox.Mode(cfg.ToolSandbox)
	if mode != sandbox.Off {
		if err := s.checkExposed(grants); err != nil {
			return nil, err
		}
	}
	if mode == sandbox.Off {
		s.log.Warn("TOOL_SANDBOX is off: Python tools run unconfined, with this service's user and files")
		return nil, nil
	}
	sb, err := sandbox.New(ctx, sandbox.Options{Python: pyhost.Interpreter(cfg.Python), Env: cfg.ToolEnviron, Dirs: s.pyDirs,
		Grants: grants, Launcher: s.opts.SandboxLauncher})
	if err != nil {
		if mode == sandbox.Required {
			return nil, fmt.Errorf("TOOL_SANDBOX is required but this host cannot sandbox Python tools: %w", err)
		}
		s.log.Warn("this host cannot sandbox Python tools; they run unconfined (TOOL_SANDBOX=auto)", "err", err)
		return nil, nil
	}
	for _, g := range grants {
		s.log.Info("tool path granted", "module", g.Module, "path", g.Path, "write", g.Write)
	}
	s.log.Info("python tools run sandboxed", "layers", sb.Describe(), "python", sb.Python())
	return sb, nil
}

// checkExposed refuses tool folders or TOOL_PATHS that contain the data
// folder or the NATS seeds: Landlock grants whole trees, so tools could
// read them despite the sandbox.
func (s *Service) checkExposed(grants []sandbox.Grant) error {
	cfg := s.opts.Config
	var private []string
	for _, p := range []string{cfg.DevDir, cfg.NATSCredsDir} {
		if abs, err := filepath.Abs(p); p != "" && err == nil {
			if _, err := os.Stat(abs); err == nil {
				private = append(private, abs)
			}
		}
	}
	readable := map[string]string{}
	for _, d := range s.pyDirs {
		readable[d] = "MCP_TOOL_DIRS"
	}
	for _, g := range grants {
		readable[g.Path] = "TOOL_PATHS"
	}
	for dir, key := range readable {
		for _, p := range private {
			if rel, err := filepath.Rel(dir, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				return fmt.Errorf("config: %s: %s contains %s (DEV_DIR or NATS_CREDS_DIR), which tools could then read", key, dir, p)
			}
		}
	}
	return nil
}
