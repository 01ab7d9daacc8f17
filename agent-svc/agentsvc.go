// Package agentsvc is agent-svc: Deep and Base agent loops and LLM providers. It keeps no durable state, so any
// replica in the "agent" queue group serves any request.
package agentsvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/mirobody/mirobody-go/agent-svc/internal/base"
	"github.com/mirobody/mirobody-go/agent-svc/internal/deep"
	"github.com/mirobody/mirobody-go/agent-svc/internal/jsrepl"
	"github.com/mirobody/mirobody-go/agent-svc/internal/turn"
	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/node"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/svc"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Name is the micro service name and subject prefix.
const Name = "agent"

// Options configures the service.
type Options struct {
	// Config supplies NATS_URL and the service's keys.
	Config *conf.Config
	// Log is the service logger. Required.
	Log *slog.Logger
	// Metrics receives the service's Prometheus metrics; nil means none.
	Metrics prometheus.Registerer
}

// Service is agent-svc.
type Service struct {
	opts Options
	log  *slog.Logger
	node *node.Node
	// tracer makes the turn, model call and agent tool spans.
	tracer trace.Tracer

	// providers and agents map deep and base to their providers and to
	// the agent running their turns.
	providers map[agent.Name]*providerSet
	agents    map[agent.Name]turn.Agent
	// prompts are each agent's PROMPT_ and PROMPTS_ templates.
	prompts  map[agent.Name]*promptSet
	sessions *sessions.Sessions
	repl     *jsrepl.Store
	scripted *scripted.Server
	subs     []*nats.Subscription

	mu   sync.Mutex
	runs map[string]runningRun
	// turns counts each account's running turns (AGENT_MAX_TURNS_PER_ACCOUNT).
	turns map[string]int
	// sessionTurns holds, per account/session, a channel closed when the
	// session's running turn has saved (see enterSession).
	sessionTurns map[string]chan struct{}
	wg           sync.WaitGroup
	// halted ends when Stop gives up waiting, so that even the work a
	// cancelled run still does (saving its session) stops.
	halted context.Context
	halt   context.CancelFunc
}

// New returns a agent-svc that is not started.
func New(opts Options) *Service {
	halted, halt := context.WithCancel(context.Background())
	return &Service{opts: opts, log: opts.Log.With("component", "agent-svc"), runs: map[string]runningRun{}, turns: map[string]int{},
		sessionTurns: map[string]chan struct{}{}, halted: halted, halt: halt}
}

// Name implements svc.Service.
func (s *Service) Name() string { return "agent-svc" }

// Start connects to NATS and serves the endpoints.
func (s *Service) Start(ctx context.Context) error {
	cfg := s.opts.Config
	deepPrompts, err := loadPrompts(cfg.Dir, agent.AgentDeep, cfg.PromptDeep, cfg.PromptsDeep, s.log)
	if err != nil {
		return err
	}
	basePrompts, err := loadPrompts(cfg.Dir, agent.AgentBase, cfg.PromptBase, cfg.PromptsBase, s.log)
	if err != nil {
		return err
	}
	s.prompts = map[agent.Name]*promptSet{agent.AgentDeep: deepPrompts, agent.AgentBase: basePrompts}
	s.providers = map[agent.Name]*providerSet{agent.AgentDeep: newProviderSet(cfg, agent.AgentDeep, cfg.ProvidersDeep),
		agent.AgentBase: newProviderSet(cfg, agent.AgentBase, cfg.ProvidersBase)}
	if cfg.Provider == ScriptedProvider {
		srv, err := scripted.Listen("127.0.0.1:0", scripted.Demo)
		if err != nil {
			return err
		}
		s.scripted = srv
		s.providers[agent.AgentDeep].add(ScriptedProvider, conf.Provider{Type: "openai", Model: "scripted", BaseURL: srv.OpenAIBaseURL()})
		s.providers[agent.AgentBase].add(ScriptedProvider, conf.Provider{Type: "openai-responses", Model: "scripted", BaseURL: srv.OpenAIBaseURL()})
		s.log.Info("using the scripted model provider", "base_url", srv.OpenAIBaseURL())
	}
	if s.opts.Metrics != nil {
		m, err := newLLMMetrics(s.opts.Metrics)
		if err != nil {
			s.closeScripted()
			return err
		}
		s.providers[agent.AgentDeep].metrics = m
	}
	for _, ps := range []*providerSet{s.providers[agent.AgentDeep], s.providers[agent.AgentBase]} {
		if err := ps.check(s.log); err != nil {
			s.closeScripted()
			return err
		}
	}
	s.warnPrivateMCPURL()
	for _, err := range conf.MissingDirs(cfg.SkillDirs) {
		s.log.Warn("a SKILL_DIRS folder is missing; the agent prompt lists none of its skills", "err", err)
	}
	n, err := node.Start(ctx, node.Options{Name: Name, Description: "Deep and Base agent loops and LLM providers",
		NATSURL: cfg.NATSURL, CredsDir: cfg.NATSCredsDir, OTLPEndpoint: cfg.OTLPEndpoint, Log: s.log, Metrics: s.opts.Metrics,
		Liveness: cfg.Liveness()})
	if err != nil {
		s.closeScripted()
		return err
	}
	s.node = n
	s.tracer = n.Tracer.Tracer("github.com/mirobody/mirobody-go/agent-svc")
	for _, ps := range s.providers {
		ps.tracer = s.tracer
	}
	s.sessions = sessions.NewSessions(n.Client)
	s.repl = jsrepl.NewStore(jsrepl.Options{Timeout: time.Duration(cfg.JSTimeoutS) * time.Second, MaxToolCalls: cfg.JSMaxToolCalls,
		MaxOutput: cfg.JSMaxOutput, MaxMemory: int64(cfg.JSMaxMemory), TTL: time.Duration(cfg.JSStateTTLS) * time.Second,
		MaxConcurrent: cfg.JSMaxConcurrent, MaxEvalsPerAccount: cfg.JSMaxEvalsPerAccount, MaxStateBytes: int64(cfg.JSMaxStateBytes), Log: s.log})
	subagents := map[string]deep.Subagent{}
	for k, v := range cfg.SubagentsDeep {
		subagents[k] = deep.Subagent{Description: v.Description, Prompt: v.Prompt}
	}
	s.agents = map[agent.Name]turn.Agent{agent.AgentDeep: deep.New(deep.Options{Registry: registry.NewClient(n.Client), FS: files.NewFS(n.Client), REPL: s.repl, Prompt: deepPrompts.def,
		Subagents: subagents, MaxSteps: cfg.MaxSteps, EvictChars: cfg.EvictChars, ContextTokens: cfg.ContextTokens,
		Allowed: cfg.AllowedToolsDeep, Disallowed: cfg.DisallowedToolsDeep, Tracer: s.tracer, Log: s.log}),
		agent.AgentBase: base.New(base.Options{MCPURL: mcpURL(cfg), Prompt: basePrompts.def, MaxSteps: cfg.MaxSteps, MaxResultChars: cfg.EvictChars, Log: s.log})}
	if err := s.register(); err != nil {
		_ = s.Stop(ctx)
		return fmt.Errorf("registering agent endpoints: %w", err)
	}
	return nil
}

// mcpURL is our /mcp as a Base provider reaches it.
func mcpURL(cfg *conf.Config) string { return strings.TrimRight(cfg.MCPPublicURL, "/") + "/mcp" }

// warnPrivateMCPURL says at start-up what would otherwise only show on the
// first Base turn: a hosted provider cannot reach a loopback or private
// MCP_PUBLIC_URL.
func (s *Service) warnPrivateMCPURL() {
	if !privateHost(s.opts.Config.MCPPublicURL) {
		return
	}
	if names := s.providers[agent.AgentBase].remoteUsable(); len(names) > 0 {
		s.log.Warn("MCP_PUBLIC_URL is a loopback or private address that hosted model providers cannot reach; Base-agent turns on these providers will fail until MCP_PUBLIC_URL is a public URL of the gateway",
			"mcp_public_url", s.opts.Config.MCPPublicURL, "providers", strings.Join(names, ","))
	}
}

func (s *Service) register() error {
	if err := wire.Serve(s.node.Service, agent.RunsStart, s.start); err != nil {
		return err
	}
	if err := wire.Serve(s.node.Service, agent.ProvidersList, s.listProviders); err != nil {
		return err
	}
	nc := s.node.Conn
	cancel, err := nc.Subscribe(agent.RunsCancel.Subject, s.onCancel)
	if err != nil {
		return fmt.Errorf("subscribing to %s: %w", agent.RunsCancel.Subject, err)
	}
	deleted, err := nc.Subscribe(agent.SessionDeleted.Subject, s.onSessionDeleted)
	if err != nil {
		return fmt.Errorf("subscribing to %s: %w", agent.SessionDeleted.Subject, err)
	}
	s.subs = append(s.subs, cancel, deleted)
	return nil
}

// listProviders answers agent.providers.list: the agents and their
// providers, for a client's model picker.
func (s *Service) listProviders(_ context.Context, _ *agent.ProvidersRequest) (*agent.ProvidersResponse, error) {
	def, _ := agent.Normalize("", s.opts.Config.DefaultAgent)
	resp := &agent.ProvidersResponse{}
	for _, n := range []agent.Name{agent.AgentDeep, agent.AgentBase} {
		resp.Agents = append(resp.Agents, agent.AgentInfo{Name: n, Default: n == def, Providers: s.providers[n].list()})
	}
	return resp, nil
}

// Stop stops taking turns, lets the turns in flight finish until ctx ends,
// then cancels the rest.
func (s *Service) Stop(ctx context.Context) error {
	if s.node == nil {
		s.closeScripted()
		return nil
	}
	err := s.node.Service.Stop(ctx)
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.mu.Lock()
		for _, r := range s.runs {
			r.cancel(fmt.Errorf("agent-svc is stopping: %w", context.Canceled))
		}
		s.mu.Unlock()
		s.halt()
		<-done
	}
	for _, sub := range s.subs {
		_ = sub.Unsubscribe()
	}
	s.subs = nil
	err = errors.Join(err, s.node.Stop(ctx))
	s.node = nil
	s.closeScripted()
	return err
}

func (s *Service) closeScripted() {
	if s.scripted != nil {
		s.scripted.Close()
		s.scripted = nil
	}
}

// Checks implements svc.Checker.
func (s *Service) Checks() []svc.Check { return s.node.Checks() }
