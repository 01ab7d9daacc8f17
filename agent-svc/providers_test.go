package agentsvc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/wire"
)

func TestProviderResolve(t *testing.T) {
	custom := map[string]conf.Provider{
		"b-openrouter": {Type: "openai", Model: "or-model", APIKey: "OPENAI_API_KEY", BaseURL: "https://openrouter.example/v1"},
		"a-claude":     {Type: "anthropic", Model: "claude", APIKey: "ANTHROPIC_API_KEY"},
		"local":        {Type: "openai", Model: "llama", BaseURL: "http://127.0.0.1:11434/v1"},
		"responses":    {Type: "openai-responses", Model: "x", APIKey: "OPENAI_API_KEY"},
		"odd":          {Type: "openai", Model: "x", APIKey: "SOME_OTHER_KEY"},
		"c-router":     {Type: "openai", Model: "router-model", APIKey: "OPENROUTER_API_KEY", BaseURL: "https://openrouter.example/v1"},
	}
	cases := []struct {
		name      string
		agent     agent.Name
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
		{"any key name: missing", "", custom, "", "", "", "odd", "", "", wire.FailedPrecondition, `provider "odd" needs SOME_OTHER_KEY, which is not set`},
		{"any key name: set", "", custom, "", "", "", "c-router", "", "router-model", "", ""},
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
			keys := map[string]string{"OPENROUTER_API_KEY": "sk-or"}
			if tc.openai != "" {
				keys["OPENAI_API_KEY"] = tc.openai
			}
			if tc.anthropic != "" {
				keys["ANTHROPIC_API_KEY"] = tc.anthropic
			}
			if tc.entries == nil {
				delete(keys, "OPENROUTER_API_KEY")
			}
			cfg := &conf.Config{ProviderKeys: keys, Provider: tc.override, ProviderRetries: 3}
			kind := tc.agent
			if kind == "" {
				kind = agent.AgentDeep
			}
			ps := newProviderSet(cfg, kind, tc.entries)
			if tc.entries != nil {
				// "local" needs no key, so it would win the default; the
				// default cases test the keyed entries.
				if tc.provider == "" && tc.override == "" {
					for _, n := range []string{"local", "c-router"} {
						delete(ps.entries, n)
						ps.order = without(ps.order, n)
					}
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

// Providers with different key names sit side by side, straight from
// config: each resolves its own key, and a failure names the provider.
func TestProvidersFromConfig(t *testing.T) {
	srv := scripted.New(scripted.Sequence(scripted.Step{Fault: &scripted.Fault{Status: 429}}))
	t.Cleanup(srv.Close)
	file := filepath.Join(t.TempDir(), "config.yaml")
	body := fmt.Sprintf(`PROVIDERS_DEEP:
  openai: {type: openai, model: gpt, api_key: OPENAI_API_KEY}
  openrouter: {type: openai, model: or, api_key: OPENROUTER_API_KEY, base_url: %q}
  ollama: {type: openai, model: llama, base_url: http://127.0.0.1:1/v1}
PROVIDER_RETRIES: 0
`, srv.OpenAIBaseURL())
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	load := func(env map[string]string) *conf.Config {
		t.Helper()
		res, err := conf.Load(conf.LoadOptions{Path: file, LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
		if err != nil {
			t.Fatal(err)
		}
		return res.Config
	}
	cfg := load(map[string]string{"OPENAI_API_KEY": "sk-oa", "OPENROUTER_API_KEY": "sk-or"})
	ps := newProviderSet(cfg, agent.AgentDeep, cfg.ProvidersDeep)
	log, logs := servicetest.CaptureLogger(t)
	if err := ps.check(log); err != nil || logs.String() != "" {
		t.Fatalf("check: %v, logs %q", err, logs.String())
	}
	for name, model := range map[string]string{"openai": "gpt", "openrouter": "or", "ollama": "llama"} {
		if r, err := ps.resolve(name, ""); err != nil || r.model != model {
			t.Errorf("resolve(%s) = %+v, %v", name, r, err)
		}
	}
	p, _ := ps.resolve("openrouter", "")
	_, err := p.provider.Stream(context.Background(), &llm.Request{Model: "or", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, func(llm.Delta) {})
	var le *llm.Error
	if !errors.As(err, &le) || le.Public() != "provider openrouter: HTTP 429 rate limited" {
		t.Fatalf("err %v, want a named 429", err)
	}
	if got := srv.Requests(); len(got) != 1 {
		t.Fatalf("requests %d, want 1 (PROVIDER_RETRIES=0)", len(got))
	}

	// Without OPENROUTER_API_KEY: a warning at start-up naming it, an
	// error when PROVIDER selects it, and a turn that picks it fails.
	cfg = load(map[string]string{"OPENAI_API_KEY": "sk-oa"})
	ps = newProviderSet(cfg, agent.AgentDeep, cfg.ProvidersDeep)
	log, logs = servicetest.CaptureLogger(t)
	if err := ps.check(log); err != nil || !strings.Contains(logs.String(), "provider=openrouter api_key=OPENROUTER_API_KEY") || strings.Contains(logs.String(), "sk-") {
		t.Fatalf("check: %v, logs %q", err, logs.String())
	}
	if _, err := ps.resolve("openrouter", ""); !wire.IsCode(err, wire.FailedPrecondition) || !strings.Contains(err.Error(), "needs OPENROUTER_API_KEY") {
		t.Errorf("resolve: %v", err)
	}
	// With PROVIDER naming a provider whose key is set, the others' keys
	// are not warned about: the override serves the turns.
	cfg.Provider = "openai"
	log, logs = servicetest.CaptureLogger(t)
	if err := newProviderSet(cfg, agent.AgentDeep, cfg.ProvidersDeep).check(log); err != nil || strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("check with PROVIDER=openai: %v, logs %q", err, logs.String())
	}
	cfg.Provider = "openrouter"
	if err := newProviderSet(cfg, agent.AgentDeep, cfg.ProvidersDeep).check(log); err == nil || err.Error() != `PROVIDER: provider "openrouter" needs OPENROUTER_API_KEY, which is not set` {
		t.Errorf("check with PROVIDER: %v", err)
	}
	cfg.Provider = "nope"
	if err := newProviderSet(cfg, agent.AgentDeep, cfg.ProvidersDeep).check(log); err == nil || !strings.Contains(err.Error(), `unknown provider "nope"`) {
		t.Errorf("check with an unknown PROVIDER: %v", err)
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

// Upstream Mirobody's provider entries work as written: llm_type,
// google-genai with GOOGLE_API_KEY, and temperature, max_tokens and
// max_completion_tokens reach the provider.
func TestUpstreamProviderEntries(t *testing.T) {
	srv := scripted.New(scripted.Sequence(scripted.Step{Text: "a"}, scripted.Step{Text: "b"}, scripted.Step{Text: "c"}))
	t.Cleanup(srv.Close)
	file := filepath.Join(t.TempDir(), "config.yaml")
	body := fmt.Sprintf(`PROVIDERS_DEEP:
  gpt-5-mini: {llm_type: openai, api_key: OPENROUTER_API_KEY, base_url: %[1]q, model: m1, temperature: 0.1, max_completion_tokens: 60000}
  gemini-3-flash: {llm_type: google-genai, base_url: %[1]q, model: g, temperature: 1.0, max_tokens: 6000}
  claude: {llm_type: anthropic, api_key: ANTHROPIC_API_KEY, base_url: %[2]q, model: c, temperature: 0.5, max_tokens: 300}
`, srv.OpenAIBaseURL(), srv.AnthropicBaseURL())
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OPENROUTER_API_KEY": "sk-or", "GOOGLE_API_KEY": "g-key", "ANTHROPIC_API_KEY": "sk-ant"}
	res, err := conf.Load(conf.LoadOptions{Path: file, LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	ps := newProviderSet(res.Config, agent.AgentDeep, res.Config.ProvidersDeep)
	if err := ps.check(servicetest.Logger(t)); err != nil {
		t.Fatal(err)
	}
	f := func(v float64) *float64 { return &v }
	want := []struct {
		name, auth       string
		temp             *float64
		maxTok, maxCompl int
	}{
		{"gpt-5-mini", "Bearer sk-or", f(0.1), 0, 60000},
		{"gemini-3-flash", "Bearer g-key", f(1), 6000, 0},
		{"claude", "", f(0.5), 300, 0},
	}
	for i, w := range want {
		p, err := ps.resolve(w.name, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.provider.Stream(context.Background(), &llm.Request{Model: p.model, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, func(llm.Delta) {}); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		got := srv.Requests()[i]
		if got.Temperature == nil || *got.Temperature != *w.temp || got.MaxTokens != w.maxTok || got.MaxCompletionTokens != w.maxCompl {
			t.Errorf("%s: provider saw temperature %v max_tokens %d max_completion_tokens %d, want %v %d %d", w.name, got.Temperature,
				got.MaxTokens, got.MaxCompletionTokens, *w.temp, w.maxTok, w.maxCompl)
		}
		if w.auth != "" && got.Header.Get("Authorization") != w.auth {
			t.Errorf("%s: Authorization %q", w.name, got.Header.Get("Authorization"))
		}
	}
	if errs := srv.Errors(); len(errs) != 0 {
		t.Errorf("scripted: %v", errs)
	}

	// A type the agent cannot use stops start-up, even when set in code.
	bad := newProviderSet(res.Config, agent.AgentBase, map[string]conf.Provider{"x": {Type: "openai", Model: "m"}})
	if err := bad.check(servicetest.Logger(t)); err == nil || !strings.Contains(err.Error(), `PROVIDERS_BASE: provider x has type "openai"`) {
		t.Errorf("check: %v", err)
	}
}

// TestProviderList: the picker's list names each provider's type and
// model, marks the one a turn without a provider uses and those whose
// key is missing, and never carries a key.
func TestProviderList(t *testing.T) {
	entries := map[string]conf.Provider{
		"a-claude": {Type: "anthropic", Model: "claude", APIKey: "ANTHROPIC_API_KEY"},
		"b-openai": {Type: "openai", Model: "gpt", APIKey: "OPENAI_API_KEY"},
	}
	for _, tc := range []struct {
		name, override, def string
	}{
		{"first ready in order", "", "b-openai"},
		{"PROVIDER wins", "a-claude", "a-claude"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &conf.Config{ProviderKeys: map[string]string{"OPENAI_API_KEY": "sk-secret"}, Provider: tc.override}
			list := newProviderSet(cfg, agent.AgentDeep, entries).list()
			want := []agent.ProviderInfo{
				{Name: "a-claude", Type: "anthropic", Model: "claude", Models: []string{"claude"}, Default: tc.def == "a-claude"},
				{Name: "b-openai", Type: "openai", Model: "gpt", Models: []string{"gpt"}, Default: tc.def == "b-openai", Ready: true},
			}
			if fmt.Sprint(list) != fmt.Sprint(want) {
				t.Errorf("list %+v, want %+v", list, want)
			}
			if strings.Contains(fmt.Sprint(list), "sk-secret") {
				t.Error("the list carries a key")
			}
		})
	}
}
