package agentsvc

import (
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/wire"
)

// ScriptedProvider is the PROVIDER value that runs the scripted test
// provider inside agent-svc, so the stack runs with no API key.
const ScriptedProvider = "scripted"

// defaultProviders apply when PROVIDERS_DEEP is empty.
var defaultProviders = map[string]conf.Provider{
	"openai":    {Type: "openai", Model: "gpt-4.1-mini", APIKey: "OPENAI_API_KEY"},
	"anthropic": {Type: "anthropic", Model: "claude-sonnet-4-5", APIKey: "ANTHROPIC_API_KEY"},
}

// providerSet resolves a turn's provider (SPEC §9).
type providerSet struct {
	entries map[string]conf.Provider
	// order is the default preference: names sorted, since a YAML
	// mapping's order does not survive decoding.
	order    []string
	secrets  map[string]string
	override string
	retries  int
}

func newProviderSet(cfg *conf.Config, entries map[string]conf.Provider) *providerSet {
	if len(entries) == 0 {
		entries = defaultProviders
	}
	// conf resolved every api_key name into its secret (nothing else reads
	// the environment).
	ps := &providerSet{entries: map[string]conf.Provider{}, override: cfg.Provider, retries: cfg.ProviderRetries, secrets: cfg.ProviderKeys}
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

// check reports at start-up what would fail at turn time (SPEC §9): a
// PROVIDER override that is unknown or lacks its key is an error naming
// it, and every other entry whose key is not set is a warning.
func (ps *providerSet) check(log *slog.Logger) error {
	if ps.override != "" {
		p, ok := ps.entries[ps.override]
		if !ok {
			return fmt.Errorf("PROVIDER: unknown provider %q (configured: %s)", ps.override, strings.Join(ps.order, ", "))
		}
		if p.APIKey != "" && ps.secrets[p.APIKey] == "" {
			return fmt.Errorf("PROVIDER: provider %q needs %s, which is not set", ps.override, p.APIKey)
		}
	}
	for _, n := range ps.order {
		if p := ps.entries[n]; p.APIKey != "" && ps.secrets[p.APIKey] == "" {
			log.Warn("a model provider's key is not set; turns that pick it fail", "provider", n, "api_key", p.APIKey)
		}
	}
	return nil
}

// resolve returns the provider for a turn and its model.
func (ps *providerSet) resolve(name, model string) (llm.Provider, string, error) {
	if name == "" {
		name = ps.override
	}
	if name == "" {
		for _, n := range ps.order {
			if p := ps.entries[n]; p.APIKey == "" || ps.secrets[p.APIKey] != "" {
				name = n
				break
			}
		}
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
			return nil, "", wire.Errorf(wire.FailedPrecondition, "no model provider is configured: set %s", strings.Join(names, " or "))
		}
	}
	p, ok := ps.entries[name]
	if !ok {
		return nil, "", wire.Errorf(wire.InvalidArgument, "unknown provider %q (configured: %s)", name, strings.Join(ps.order, ", "))
	}
	key := ""
	if p.APIKey != "" {
		key = ps.secrets[p.APIKey]
		if key == "" {
			return nil, "", wire.Errorf(wire.FailedPrecondition, "provider %q needs %s, which is not set", name, p.APIKey)
		}
	}
	if model == "" {
		model = p.Model
	}
	opts := llm.ClientOptions{Name: name, BaseURL: p.BaseURL, APIKey: key, MaxRetries: ps.retries}
	switch p.Type {
	case "openai":
		return llm.NewOpenAI(opts), model, nil
	case "anthropic":
		return llm.NewAnthropic(opts), model, nil
	}
	return nil, "", wire.Errorf(wire.FailedPrecondition, "provider %q has type %q; the Deep agent speaks openai or anthropic", name, p.Type)
}
