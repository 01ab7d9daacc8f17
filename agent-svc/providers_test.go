package agentsvc

import (
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/wire"
)

func TestProviderResolve(t *testing.T) {
	custom := map[string]conf.Provider{
		"b-openrouter": {Type: "openai", Model: "or-model", APIKey: "OPENAI_API_KEY", BaseURL: "https://openrouter.example/v1"},
		"a-claude":     {Type: "anthropic", Model: "claude", APIKey: "ANTHROPIC_API_KEY"},
		"local":        {Type: "openai", Model: "llama", BaseURL: "http://127.0.0.1:11434/v1"},
		"responses":    {Type: "openai-responses", Model: "x", APIKey: "OPENAI_API_KEY"},
		"odd":          {Type: "openai", Model: "x", APIKey: "SOME_OTHER_KEY"},
	}
	cases := []struct {
		name      string
		agent     string
		entries   map[string]conf.Provider
		openai    string
		anthropic string
		override  string
		provider  string
		model     string
		wantModel string
		code      wire.Code
		errText   string
	}{
		{"default: first entry whose key resolves", "", custom, "sk", "", "", "", "", "or-model", "", ""},
		{"default prefers sorted order", "", custom, "sk", "ak", "", "", "", "claude", "", ""},
		{"named provider with model override", "", custom, "", "ak", "", "a-claude", "claude-x", "claude-x", "", ""},
		{"no key needed", "", custom, "", "", "", "local", "", "llama", "", ""},
		{"missing key names the variable", "", custom, "", "", "", "b-openrouter", "", "", wire.FailedPrecondition, "needs OPENAI_API_KEY"},
		{"unknown key name", "", custom, "", "", "", "odd", "", "", wire.FailedPrecondition, "SOME_OTHER_KEY"},
		{"unknown provider", "", custom, "sk", "", "", "nope", "", "", wire.InvalidArgument, "unknown provider"},
		{"wrong type for deep", "", custom, "sk", "", "", "responses", "", "", wire.FailedPrecondition, "openai or anthropic"},
		{"override", "", custom, "sk", "ak", "local", "", "", "llama", "", ""},
		{"built-in defaults with no key", "", nil, "", "", "", "", "", "", wire.FailedPrecondition, "ANTHROPIC_API_KEY or OPENAI_API_KEY"},
		{"built-in default with an anthropic key", "", nil, "", "ak", "", "", "", "claude-sonnet-4-5", "", ""},
		{"base: responses", "base", custom, "sk", "", "", "responses", "", "x", "", ""},
		{"base: anthropic", "base", custom, "", "ak", "", "a-claude", "", "claude", "", ""},
		{"base: chat completions refused", "base", custom, "sk", "", "", "b-openrouter", "", "", wire.FailedPrecondition, "openai-responses or anthropic"},
		{"base: built-in default is responses", "base", nil, "sk", "", "", "", "", "gpt-4.1-mini", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &conf.Config{OpenAIAPIKey: tc.openai, AnthropicAPIKey: tc.anthropic, Provider: tc.override, ProviderRetries: 3}
			kind := tc.agent
			if kind == "" {
				kind = agent.AgentDeep
			}
			ps := newProviderSet(cfg, kind, tc.entries)
			if tc.entries != nil {
				// "local" needs no key, so it would win the default; the
				// default cases test the keyed entries.
				if tc.provider == "" && tc.override == "" {
					delete(ps.entries, "local")
					ps.order = without(ps.order, "local")
				}
			}
			p, err := ps.resolve(tc.provider, tc.model)
			if tc.code != "" {
				if !wire.IsCode(err, tc.code) || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("err %v, want %s with %q", err, tc.code, tc.errText)
				}
				return
			}
			if err != nil || p.model != tc.wantModel || (p.provider == nil) == (p.remote == nil) || (kind == agent.AgentBase) != (p.remote != nil) {
				t.Fatalf("got %+v %v, want model %q for %s", p, err, tc.wantModel, kind)
			}
		})
	}
}

func without(xs []string, x string) []string {
	var out []string
	for _, v := range xs {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}

func TestNormalizeAgent(t *testing.T) {
	cases := map[string]string{"": "deep", "Deep": "deep", "BASE": "base", "Baseline": "base"}
	for in, want := range cases {
		if got, err := normalizeAgent(in, "deep"); err != nil || got != want {
			t.Errorf("normalizeAgent(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := normalizeAgent("other", "deep"); !wire.IsCode(err, wire.InvalidArgument) {
		t.Errorf("unknown agent: %v", err)
	}
}

func TestPrivateHost(t *testing.T) {
	cases := map[string]bool{"http://localhost:18080": true, "http://127.0.0.1:1": true, "http://[::1]/": true, "http://10.1.2.3": true,
		"http://app.localhost": true, "http://0.0.0.0:80": true, "https://mcp.example.com": false, "https://8.8.8.8": false}
	for u, want := range cases {
		if got := privateHost(u); got != want {
			t.Errorf("privateHost(%q) = %v, want %v", u, got, want)
		}
	}
}
