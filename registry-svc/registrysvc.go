// Package registrysvc is registry-svc: Tool discovery, visibility and execution. It keeps no durable state, so any
// replica in the "registry" queue group serves any request.
package registrysvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mirobody/mirobody-go/registry-svc/internal/builtin"
	"github.com/mirobody/mirobody-go/registry-svc/internal/pyhost"
	"github.com/mirobody/mirobody-go/registry-svc/internal/sandbox"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/node"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/ssrf"
	"github.com/mirobody/mirobody-go/services/svc"
	"github.com/mirobody/mirobody-go/services/vfs/mcpservers"
	"github.com/mirobody/mirobody-go/services/vfs/userdata"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Name is the micro service name and subject prefix.
const Name = "registry"

// Options configures the service.
type Options struct {
	// Config supplies NATS_URL and the service's keys.
	Config *conf.Config
	// Log is the service logger. Required.
	Log *slog.Logger
	// Metrics, when set, receives the NATS request, tool call and tool host
	// metrics.
	Metrics prometheus.Registerer
	// Builtins replaces the Go built-ins (tests); nil means builtin.All().
	Builtins []*builtin.Tool
	// ExternalRefresh is how often open external MCP servers are listed
	// again (their health check); zero means 30 s. Tests shorten it.
	ExternalRefresh time.Duration
	// SandboxLauncher is the binary holding the tool sandbox's launcher
	// (see RunToolSandbox); empty means this one. Tests point it at a
	// binary without the launcher to see how start-up handles a host that
	// cannot sandbox.
	SandboxLauncher string
}

// Service is registry-svc.
type Service struct {
	opts    Options
	log     *slog.Logger
	node    *node.Node
	reg     *Registry
	pyDirs  []string
	sandbox *sandbox.Sandbox // nil when Python tools run unconfined
	watcher *watcher
	// resWatch announces changes of skills and resource folders.
	resWatch *resourceWatch
	subs     []*nats.Subscription
	retired  sync.WaitGroup // pools of replaced snapshots, still draining
	// retiring ends the drain of replaced pools early when the service stops.
	retiring     context.Context
	stopRetiring context.CancelFunc
	// restarts counts replaced Python host processes across reloads.
	restarts atomic.Int64
	// pyChecked is set once a Python pool started: reloads skip the
	// interpreter's version check.
	pyChecked bool
}

// New returns a registry-svc that is not started.
func New(opts Options) *Service {
	if opts.Builtins == nil {
		opts.Builtins = builtin.All()
	}
	return &Service{opts: opts, log: opts.Log.With("component", "registry-svc")}
}

// Name implements svc.Service.
func (s *Service) Name() string { return "registry-svc" }

// Start discovers the tools, starts the Python tool host pool, connects to
// NATS, serves the endpoints and subscribes to the events it follows.
func (s *Service) Start(ctx context.Context) error {
	cfg := s.opts.Config
	dirs, err := s.toolDirs()
	if err != nil {
		return err
	}
	for _, err := range conf.MissingDirs(cfg.SkillDirs) {
		s.log.Warn("a SKILL_DIRS folder is missing; read_skill finds none of its skills", "err", err)
	}
	if len(s.pyDirs) > 0 {
		if s.sandbox, err = s.toolSandbox(ctx); err != nil {
			return err
		}
	}
	n, err := node.Start(ctx, node.Options{Name: Name, Description: "Tool discovery, visibility and execution",
		NATSURL: cfg.NATSURL, CredsDir: cfg.NATSCredsDir, OTLPEndpoint: cfg.OTLPEndpoint, Log: s.log, Metrics: s.opts.Metrics,
		Liveness: cfg.Liveness()})
	if err != nil {
		return err
	}
	s.node = n
	s.retiring, s.stopRetiring = context.WithCancel(context.Background())
	s.reg = &Registry{
		log:     s.log,
		pub:     n.Client,
		audit:   newAuditor(n.Client, s.log),
		tracer:  n.Tracer.Tracer("github.com/mirobody/mirobody-go/registry-svc"),
		timeout: cfg.ToolTimeout,
		cancels: map[callKey]context.CancelCauseFunc{},
		deps:    &builtin.Deps{Client: n.Client, Log: s.log, SkillDirs: cfg.SkillDirs},
		policy: &policy{kinds: newKindsCache(userdata.NewData(n.Client), s.log), vis: Visibility{
			Allowed:    map[agent.Name][]string{agent.AgentDeep: cfg.AllowedToolsDeep, agent.AgentBase: cfg.AllowedToolsBase},
			Disallowed: map[agent.Name][]string{agent.AgentDeep: cfg.DisallowedToolsDeep, agent.AgentBase: cfg.DisallowedToolsBase},
		}},
	}
	guard := &ssrf.Guard{AllowPrivate: cfg.MCPClientAllowPriv, Log: s.log}
	s.reg.ext = newExternal(externalOptions{Log: s.log, Guard: guard, Store: mcpservers.NewMCPServers(n.Client), Pub: n.Client,
		Refresh: s.opts.ExternalRefresh, MaxBytes: cfg.ExtMaxResultBytes, MaxTools: cfg.ExtMaxTools, Tracer: s.reg.tracer})
	snap, err := s.discover(ctx, dirs)
	if err != nil {
		_ = s.stopAll(ctx)
		return err
	}
	s.reg.swap(snap)
	s.log.Info("tools discovered", "tools", len(snap.sorted), "revision", snap.revision)
	s.reg.policy.vis.warnUnknown(func(name string) bool { return snap.byName[name] != nil }, s.log)
	if s.opts.Metrics != nil {
		if err := s.registerMetrics(); err != nil {
			_ = s.stopAll(ctx)
			return err
		}
	}
	if err := s.serve(); err != nil {
		_ = s.stopAll(ctx)
		return err
	}
	if cfg.ToolsWatch && len(s.pyDirs) > 0 {
		w, err := newWatcher(s.pyDirs, 150*time.Millisecond, s.log, func() { s.reload(context.Background(), dirs) })
		if err != nil {
			_ = s.stopAll(ctx)
			return err
		}
		s.watcher = w
	}
	if cfg.ToolsWatch {
		rw, err := newResourceWatch(cfg.SkillDirs, cfg.MCPResourceDirs, 150*time.Millisecond, s.node.Client, s.log)
		if err != nil {
			_ = s.stopAll(ctx)
			return err
		}
		s.resWatch = rw
	}
	return nil
}

// toolDirs resolves MCP_TOOL_DIRS: Python folders become absolute paths.
func (s *Service) toolDirs() ([]string, error) {
	var dirs []string
	s.pyDirs = nil
	for _, d := range s.opts.Config.MCPToolDirs {
		d = strings.TrimSpace(d)
		if d == "" {
			continue
		}
		if d != BuiltinDir {
			abs, err := filepath.Abs(d)
			if err != nil {
				return nil, fmt.Errorf("resolving MCP_TOOL_DIRS entry %q: %w", d, err)
			}
			d = abs
			s.pyDirs = append(s.pyDirs, d)
		}
		dirs = append(dirs, d)
	}
	return dirs, nil
}

// discover starts a fresh Python pool (when Python folders are configured)
// and builds a snapshot from it and the built-ins.
func (s *Service) discover(ctx context.Context, dirs []string) (*snapshot, error) {
	var pool *pyhost.Pool
	found := &pyhost.Discovery{}
	if len(s.pyDirs) > 0 {
		cfg := s.opts.Config
		var err error
		pool, found, err = pyhost.Start(ctx, pyhost.Options{Python: cfg.Python, Workers: cfg.PythonWorkers, Dirs: s.pyDirs, Env: cfg.ToolEnviron, Log: s.log,
			Sandbox: s.sandbox, Tracer: s.reg.tracer, OnRestart: func() { s.restarts.Add(1) }, VersionChecked: s.pyChecked})
		if err != nil {
			return nil, fmt.Errorf("starting the Python tool host: %w", err)
		}
		s.pyChecked = true
	}
	snap := buildSnapshot(dirs, s.opts.Builtins, found.Tools, pool, s.log)
	snap.failed = found.Failed
	snap.resources, snap.prompts = found.Resources, found.Prompts
	return snap, nil
}

// reload rediscovers in a fresh host and swaps the registry atomically. A
// reload that fails, or that breaks a file which imported before, keeps the
// current tools.
func (s *Service) reload(ctx context.Context, dirs []string) {
	snap, err := s.discover(ctx, dirs)
	if err != nil {
		s.log.Error("tool reload failed; keeping the previous tools", "err", err)
		return
	}
	old := s.reg.current()
	if broken := newlyFailed(old.failed, snap.failed); len(broken) > 0 {
		s.log.Error("tool reload found files that fail to import; keeping the previous tools", "files", broken)
		closePool(context.Background(), snap.pool, 0)
		return
	}
	s.reg.swap(snap)
	s.announceExtras(ctx, old, snap)
	s.retired.Add(1)
	go func() {
		defer s.retired.Done()
		closePool(s.retiring, old.pool, s.opts.Config.MaxToolTimeout())
	}()
	if snap.revision == old.revision {
		return
	}
	s.log.Info("tools reloaded", "tools", len(snap.sorted), "revision", snap.revision)
	if err := registry.Changed.Publish(ctx, s.node.Client, &registry.ChangedEvent{Revision: snap.revision}); err != nil {
		s.log.Warn("publishing the registry change failed", "err", err)
	}
}

func newlyFailed(before, after []string) []string {
	var out []string
	for _, f := range after {
		if !contains(before, f) {
			out = append(out, f)
		}
	}
	return out
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// closePool drains p (waiting for calls in flight up to grace, or until ctx
// ends) and stops it.
func closePool(ctx context.Context, p *pyhost.Pool, grace time.Duration) {
	if p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	p.Close(ctx)
}

// serve registers the endpoints and the event subscriptions.
func (s *Service) serve() error {
	if err := wire.ServePreencoded(s.node.Service, registry.ToolsList, s.reg.listEncoded); err != nil {
		return err
	}
	if err := wire.Serve(s.node.Service, registry.ToolsCall, s.reg.Call); err != nil {
		return err
	}
	if err := (&serverHandlers{x: s.reg.ext}).register(s.node.Service); err != nil {
		return err
	}
	if err := (&skillHandlers{dirs: s.opts.Config.SkillDirs}).register(s.node.Service); err != nil {
		return err
	}
	if err := (&resourceHandlers{reg: s.reg, dirs: s.opts.Config.MCPResourceDirs}).register(s.node.Service); err != nil {
		return err
	}
	cancelSub, err := s.node.Conn.Subscribe(registry.CallsCancel.Subject, func(m *nats.Msg) {
		if ev, err := registry.CallsCancel.Decode(m); err == nil && ev.CallID != "" {
			s.reg.cancelCall(ev)
		}
	})
	if err != nil {
		return fmt.Errorf("subscribing to %s: %w", registry.CallsCancel.Subject, err)
	}
	dataSub, err := s.node.Conn.Subscribe(userdata.DataChanged.Subject, func(m *nats.Msg) {
		s.reg.policy.kinds.invalidate(userdata.DataChanged.Token(m.Subject))
	})
	if err != nil {
		return fmt.Errorf("subscribing to data changes: %w", err)
	}
	acctSub, err := s.node.Conn.Subscribe(registry.AccountChanged.Subject, func(m *nats.Msg) {
		s.reg.ext.invalidate(registry.AccountChanged.Token(m.Subject))
	})
	if err != nil {
		return fmt.Errorf("subscribing to account tool changes: %w", err)
	}
	s.subs = append(s.subs, cancelSub, dataSub, acctSub)
	// Subscriptions are sent asynchronously: flush so that the server knows
	// them before Start returns and callers are told we serve.
	if err := s.node.Conn.Flush(); err != nil {
		return fmt.Errorf("flushing subscriptions: %w", err)
	}
	return nil
}

// Stop stops the watch, drains the endpoints (waiting for calls in flight)
// and stops the Python tool host processes.
func (s *Service) Stop(ctx context.Context) error {
	return s.stopAll(ctx)
}

func (s *Service) stopAll(ctx context.Context) error {
	var errs []error
	if s.watcher != nil {
		errs = append(errs, s.watcher.close())
		s.watcher = nil
	}
	if s.resWatch != nil {
		errs = append(errs, s.resWatch.close())
		s.resWatch = nil
	}
	for _, sub := range s.subs {
		_ = sub.Unsubscribe()
	}
	s.subs = nil
	if s.reg != nil {
		// Before the connection closes, so that queued records still go out.
		s.reg.audit.close()
	}
	errs = append(errs, s.node.Stop(ctx))
	s.node = nil
	if s.reg != nil && s.reg.ext != nil {
		s.reg.ext.close()
		s.reg.ext = nil
	}
	if s.reg != nil {
		if snap := s.reg.current(); snap != nil && snap.pool != nil {
			snap.pool.Close(ctx)
		}
	}
	if s.stopRetiring != nil {
		s.stopRetiring()
	}
	s.retired.Wait()
	return errors.Join(errs...)
}

// Checks implements svc.Checker.
func (s *Service) Checks() []svc.Check { return s.node.Checks() }
