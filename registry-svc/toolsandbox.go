package registrysvc

import (
	"context"
	"fmt"

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
