package agentsvc

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/ssrf"
	"github.com/mirobody/mirobody-go/services/wire"
)

// ScriptedProvider is the PROVIDER value that runs the scripted test
// provider inside agent-svc, so the stack runs with no API key.
const ScriptedProvider = "scripted"

// GeminiBaseURL is Gemini's OpenAI-compatible endpoint, which serves
// upstream Mirobody's llm_type google-genai.
const GeminiBaseURL = "https://generativelanguage.googleapis.com/v1beta/openai/"

// speaks lists the provider types each agent can use.
var speaks = map[agent.Name][]string{
	agent.AgentDeep: {"openai", "anthropic", "google-genai"},
	agent.AgentBase: {"openai-responses", "anthropic"},
}

// defaultProviders apply when PROVIDERS_DEEP or PROVIDERS_BASE is empty.
var defaultProviders = map[agent.Name]map[string]conf.Provider{
	agent.AgentDeep: {
		"openai":    {Type: "openai", Model: "gpt-4.1-mini", APIKey: "OPENAI_API_KEY"},
		"anthropic": {Type: "anthropic", Model: "claude-sonnet-4-5", APIKey: "ANTHROPIC_API_KEY"},
	},
	agent.AgentBase: {
		"openai":    {Type: "openai-responses", Model: "gpt-4.1-mini", APIKey: "OPENAI_API_KEY"},
		"anthropic": {Type: "anthropic", Model: "claude-sonnet-4-5", APIKey: "ANTHROPIC_API_KEY"},
	},
}

// providerSet resolves a turn's provider for one agent (agent-svc/design.md "Chat turns").
type providerSet struct {
	// agent is deep or base: what the providers are built for.
	agent   agent.Name
	entries map[string]conf.Provider
	// order is the default preference: names sorted, since a YAML
	// mapping's order does not survive decoding.
	order    []string
	secrets  map[string]string
	override string
	retries  int
	metrics  *llmMetrics // nil: model calls are not measured
	// tracer records model calls as spans (llmtrace.go); nil records none.
	tracer trace.Tracer
}

func newProviderSet(cfg *conf.Config, agentName agent.Name, entries map[string]conf.Provider) *providerSet {
	if len(entries) == 0 {
		entries = defaultProviders[agentName]
	}
	// conf resolved every api_key name into its secret (nothing else reads
	// the environment).
	ps := &providerSet{agent: agentName, entries: map[string]conf.Provider{}, override: cfg.Provider, retries: cfg.ProviderRetries, secrets: cfg.ProviderKeys}
	if ps.retries == 0 {
		ps.retries = -1 // llm treats 0 as its default; PROVIDER_RETRIES=0 means none
	}
	for k, v := range entries {
		ps.entries[k] = v
		ps.order = append(ps.order, k)
	}
	sort.Strings(ps.order)
	return ps
}

// add registers an entry whose key needs no secret (the scripted server).
func (ps *providerSet) add(name string, p conf.Provider) {
	if _, ok := ps.entries[name]; !ok {
		ps.order = append([]string{name}, ps.order...)
	}
	ps.entries[name] = p
}

// check reports at start-up what would fail at turn time (agent-svc/design.md "Chat turns"): a
// PROVIDER override that is unknown or lacks its key is an error naming
// it, and every other entry whose key is not set is a warning (a debug
// line when PROVIDER is set). PROVIDER
// picks among the Deep providers; a Base set only checks it when it has
// an entry of that name.
func (ps *providerSet) check(log *slog.Logger) error {
	for _, n := range ps.order {
		if t := ps.entries[n].Type; !slices.Contains(speaks[ps.agent], t) {
			return fmt.Errorf("PROVIDERS_%s: provider %s has type %q; the %s agent speaks %s", strings.ToUpper(string(ps.agent)), n, t, ps.agent, strings.Join(speaks[ps.agent], ", "))
		}
	}
	if ps.override != "" {
		p, ok := ps.entries[ps.override]
		switch {
		case !ok && ps.agent == agent.AgentDeep:
			return fmt.Errorf("PROVIDER: unknown provider %q (configured: %s)", ps.override, strings.Join(ps.order, ", "))
		case ok && p.APIKey != "" && ps.secrets[p.APIKey] == "":
			return fmt.Errorf("PROVIDER: provider %q needs %s, which is not set", ps.override, p.APIKey)
		}
	}
	// With PROVIDER set, the others serve only turns that name them, so a
	// missing key of theirs is routine (PROVIDER=scripted needs none).
	level := slog.LevelWarn
	if ps.override != "" {
		level = slog.LevelDebug
	}
	for _, n := range ps.order {
		if p := ps.entries[n]; n != ps.override && p.APIKey != "" && ps.secrets[p.APIKey] == "" {
			log.Log(context.Background(), level, "a model provider's key is not set; turns that pick it fail", "agent", ps.agent, "provider", n, "api_key", p.APIKey)
		}
	}
	return nil
}

// resolved is a turn's provider: provider for Deep, remote for Base.
type resolved struct {
	provider llm.Provider
	remote   llm.MCPProvider
	model    string
}

// defaultName is the provider a turn that names none uses: PROVIDER, else
// the first in order whose key is set ("" when none is).
func (ps *providerSet) defaultName() string {
	if ps.override != "" {
		return ps.override
	}
	for _, n := range ps.order {
		if ps.ready(n) {
			return n
		}
	}
	return ""
}

// ready reports whether provider n's key is set (or it needs none).
func (ps *providerSet) ready(n string) bool {
	p := ps.entries[n]
	return p.APIKey == "" || ps.secrets[p.APIKey] != ""
}

// list describes the providers for a client's picker, without keys.
func (ps *providerSet) list() []agent.ProviderInfo {
	def := ps.defaultName()
	out := []agent.ProviderInfo{}
	for _, n := range ps.order {
		p := ps.entries[n]
		out = append(out, agent.ProviderInfo{Name: n, Type: p.Type, Model: p.Model, Models: []string{p.Model},
			Default: n == def, Ready: ps.ready(n)})
	}
	return out
}

// resolve returns the provider for a turn and its model.
func (ps *providerSet) resolve(name, model string) (*resolved, error) {
	if name == "" {
		name = ps.defaultName()
		if name == "" {
			keys := map[string]bool{}
			for _, p := range ps.entries {
				keys[p.APIKey] = true
			}
			var names []string
			for k := range keys {
				names = append(names, k)
			}
			sort.Strings(names)
			return nil, wire.Errorf(wire.FailedPrecondition, "no model provider is configured: set %s", strings.Join(names, " or "))
		}
	}
	p, ok := ps.entries[name]
	if !ok {
		return nil, wire.Errorf(wire.InvalidArgument, "unknown provider %q (configured: %s)", name, strings.Join(ps.order, ", "))
	}
	key := ""
	if p.APIKey != "" {
		key = ps.secrets[p.APIKey]
		if key == "" {
			return nil, wire.Errorf(wire.FailedPrecondition, "provider %q needs %s, which is not set", name, p.APIKey)
		}
	}
	if model == "" {
		model = p.Model
	}
	opts := llm.ClientOptions{Name: name, BaseURL: p.BaseURL, APIKey: key, MaxRetries: ps.retries,
		Sampling: llm.Sampling{Temperature: p.Temperature, MaxTokens: p.MaxTokens, MaxCompletionTokens: p.MaxCompletionTokens}}
	var spans *llmSpan
	if ps.tracer != nil {
		spans = newLLMSpan(ps.tracer, name, p.Type, p.BaseURL, model)
	}
	var remote llm.MCPProvider
	switch {
	case ps.agent == agent.AgentBase && p.Type == "openai-responses":
		remote = llm.NewOpenAIResponses(opts)
	case ps.agent == agent.AgentBase && p.Type == "anthropic":
		remote = llm.NewAnthropic(opts)
	case ps.agent == agent.AgentBase:
		return nil, wire.Errorf(wire.FailedPrecondition, "provider %q has type %q; the Base agent speaks openai-responses or anthropic (PROVIDERS_BASE)", name, p.Type)
	}
	if remote != nil {
		if spans != nil {
			remote = &tracedMCPProvider{next: remote, s: spans}
		}
		return &resolved{remote: remote, model: model}, nil
	}
	if ps.metrics != nil {
		opts.HTTPClient = ps.metrics.httpClient()
	}
	var provider llm.Provider
	switch p.Type {
	case "openai":
		provider = llm.NewOpenAI(opts)
	case "google-genai":
		opts.BaseURL = cmp.Or(opts.BaseURL, GeminiBaseURL)
		provider = llm.NewOpenAI(opts)
	case "anthropic":
		provider = llm.NewAnthropic(opts)
	default:
		return nil, wire.Errorf(wire.FailedPrecondition, "provider %q has type %q; the Deep agent speaks openai or anthropic", name, p.Type)
	}
	if ps.metrics != nil {
		label := model
		if model != p.Model {
			label = otherModel
		}
		provider = &meteredProvider{next: provider, m: ps.metrics, provider: name, model: label}
	}
	if spans != nil {
		provider = &tracedProvider{next: provider, s: spans}
	}
	return &resolved{provider: provider, model: model}, nil
}

// remoteUsable lists the providers whose key resolves and that run on
// another host (a provider on a loopback base_url, such as the scripted
// one, reaches a loopback MCP_PUBLIC_URL).
func (ps *providerSet) remoteUsable() []string {
	var out []string
	for _, n := range ps.order {
		p := ps.entries[n]
		if p.APIKey != "" && ps.secrets[p.APIKey] == "" {
			continue
		}
		if p.BaseURL != "" && privateHost(p.BaseURL) {
			continue
		}
		out = append(out, n)
	}
	return out
}

// privateHost reports whether a URL's host is localhost or an address the
// SSRF policy calls internal (loopback, private, link-local, …): a hosted
// provider cannot reach it.
func privateHost(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ssrf.Refusal(ip) != ""
}
