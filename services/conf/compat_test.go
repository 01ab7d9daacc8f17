package conf

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// upstreamConfig is the shape of upstream Mirobody's config.yaml: upper-case
// values, lower-case keys, its agent names, llm_type, sampling fields and
// keys for features this project does not have.
const upstreamConfig = `
LOG_LEVEL: DEBUG
log_format: TEXT
HTTP_SERVER_NAME: mirobody
REDIS_HOST: 10.0.0.9
REDIS_PORT: 6379
PG_HOST: 10.0.0.2
PG_PASSWORD: REPLACE_THIS_VALUE_IN_PRODUCTION
JWT_KEY: REPLACE_THIS_VALUE_IN_PRODUCTION
AGENT_DIRS: [mirobody/pub/agents]
MCP_TOOL_DIRS: [tools]
GOOGLE_API_KEY: g-secret
OPENROUTER_API_KEY: ""
ALLOWED_TOOLS_DEEP:
DISALLOWED_TOOLS_DEEP: [js_eval, task]
PROMPTS_DEEP: [prompts/health.jinja, prompts/short.txt@short]
PROVIDERS_DEEP:
  gemini-3-flash:
    llm_type: google-genai
    model: gemini-3-flash-preview
    temperature: 1.0
    max_tokens: 60000
  gpt-5-mini:
    llm_type: OpenAI
    api_key: OPENROUTER_API_KEY
    base_url: https://openrouter.ai/api/v1
    model: openai/gpt-5-mini
    temperature: 0.1
    max_completion_tokens: 60000
    input_price: 0.5
ALLOWED_TOOLS_RTC:
PROMPTS_RTC:
PROVIDERS_BASELINE:
  gpt-5-nano: {api_key: OPENAI_API_KEY, model: gpt-5-nano}
DISALLOWED_TOOLS_BASELINE: [code_service]
PROVIDERS_MIX:
  x: {llm_type: openai, model: m}
`

func TestUpstreamConfig(t *testing.T) {
	path := writeFile(t, upstreamConfig)
	res, err := Load(LoadOptions{Path: path, LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Config
	if c.LogLevel != "debug" || c.LogFormat != "text" {
		t.Errorf("enum values are case-insensitive: LOG_LEVEL %q LOG_FORMAT %q", c.LogLevel, c.LogFormat)
	}
	if !reflect.DeepEqual(c.DisallowedToolsBase, []string{"code_service"}) || !reflect.DeepEqual(c.DisallowedToolsDeep, []string{"js_eval", "task"}) {
		t.Errorf("tool lists: base %v deep %v", c.DisallowedToolsBase, c.DisallowedToolsDeep)
	}
	if c.Dir != filepath.Dir(path) || len(c.PromptsDeep) != 2 {
		t.Errorf("Dir %q PromptsDeep %v", c.Dir, c.PromptsDeep)
	}
	g := c.ProvidersDeep["gemini-3-flash"]
	if g.Type != "google-genai" || g.LLMType != "" || g.APIKey != "GOOGLE_API_KEY" || g.Temperature == nil || *g.Temperature != 1 || g.MaxTokens != 60000 {
		t.Errorf("gemini entry = %+v", g)
	}
	o := c.ProvidersDeep["gpt-5-mini"]
	if o.Type != "openai" || o.MaxCompletionTokens != 60000 || *o.Temperature != 0.1 {
		t.Errorf("openrouter entry = %+v", o)
	}
	if c.ProviderKeys["GOOGLE_API_KEY"] != "g-secret" {
		t.Errorf("GOOGLE_API_KEY not resolved: %v", c.ProviderKeys)
	}
	want := []string{
		"PROVIDERS_DEEP: provider gpt-5-mini: field input_price in " + path + " does nothing here and is ignored",
		"upstream Mirobody config keys AGENT_DIRS in " + path + " do nothing here: not supported: tools come from MCP_TOOL_DIRS and skills from SKILL_DIRS",
		"upstream Mirobody config keys HTTP_SERVER_NAME in " + path + " do nothing here: the gateway serves its own web app; set HTTP_ADDR, MCP_PUBLIC_URL and ALLOWED_ORIGINS",
		"upstream Mirobody config keys JWT_KEY in " + path + " do nothing here: access tokens are Ed25519 JWTs whose keys SECRET_KEY seals; set SECRET_KEY",
		"upstream Mirobody config keys PG_HOST, PG_PASSWORD in " + path + " do nothing here: set DATABASE_URL (a postgres:// URL) instead",
		"upstream Mirobody config keys PROVIDERS_BASELINE in " + path + " do nothing here: the Base agent's provider calls our /mcp itself: set PROVIDERS_BASE with type openai-responses or anthropic",
		"upstream Mirobody config keys PROVIDERS_MIX in " + path + " do nothing here: there is no MIX agent here (DEEP and BASE only; a turn naming another agent runs DEFAULT_AGENT)",
		"upstream Mirobody config keys REDIS_HOST, REDIS_PORT in " + path + " do nothing here: not needed: NATS and PostgreSQL hold what Redis did",
	}
	if !reflect.DeepEqual(res.Warnings, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(res.Warnings, "\n"), strings.Join(want, "\n"))
	}
}

func TestCompatValues(t *testing.T) {
	tests := []struct {
		name, file string
		env        map[string]string
		check      func(c *Config) bool
		warn, err  string
	}{
		{"warning level", "LOG_LEVEL: Warning\n", nil, func(c *Config) bool { return c.LogLevel == "warn" }, "", ""},
		{"critical level", "", map[string]string{"LOG_LEVEL": "CRITICAL"}, func(c *Config) bool { return c.LogLevel == "error" }, "", ""},
		{"baseline agent", "default_agent: Baseline\n", nil, func(c *Config) bool { return c.DefaultAgent == "base" }, "", ""},
		{"alias from env", "", map[string]string{"ALLOWED_TOOLS_BASELINE": "a,b"}, func(c *Config) bool { return len(c.AllowedToolsBase) == 2 }, "", ""},
		{"ours wins over the alias", "ALLOWED_TOOLS_BASE: [a]\nALLOWED_TOOLS_BASELINE: [b, c]\n", nil,
			func(c *Config) bool { return reflect.DeepEqual(c.AllowedToolsBase, []string{"a"}) }, "ALLOWED_TOOLS_BASELINE (upstream's name for it) are both in", ""},
		{"same key twice", "LOG_LEVEL: info\nlog_level: debug\n", nil, nil, "", "keys LOG_LEVEL and log_level are the same key"},
		{"unknown type", "PROVIDERS_DEEP: {x: {llm_type: vertex, model: m}}\n", nil, nil, "", `config: PROVIDERS_DEEP: provider x: type "vertex" is not one of openai, anthropic, google-genai`},
		{"no type", "PROVIDERS_DEEP: {x: {model: m}}\n", nil, nil, "", "config: PROVIDERS_DEEP: provider x has no type"},
		{"deep type on base", "PROVIDERS_BASE: {x: {type: openai, model: m}}\n", nil, nil, "", `config: PROVIDERS_BASE: provider x: type "openai" is not one of openai-responses, anthropic`},
		{"types disagree", "PROVIDERS_DEEP: {x: {type: openai, llm_type: anthropic, model: m}}\n", nil, nil, "", "type \"openai\" and llm_type \"anthropic\" disagree"},
		{"temperature range", "PROVIDERS_DEEP: {x: {type: openai, model: m, temperature: 7}}\n", nil, nil, "", "temperature 7 is not between 0 and 2"},
		{"providers from env", "", map[string]string{"PROVIDERS_DEEP": `{"g":{"llm_type":"google-genai","model":"m","max_tokens":5}}`},
			func(c *Config) bool {
				g := c.ProvidersDeep["g"]
				return g.Type == "google-genai" && g.APIKey == "GOOGLE_API_KEY" && g.MaxTokens == 5
			}, "", ""},
		{"an empty upstream key is silent", "REDIS_HOST: ''\nPROMPTS_RTC:\n", nil, func(*Config) bool { return true }, "", ""},
		{"a typo still warns", "ALOWED_TOOLS_DEEP: [x]\n", nil, func(*Config) bool { return true }, "unknown config key ALOWED_TOOLS_DEEP", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Load(LoadOptions{Path: writeFile(t, tt.file), LookupEnv: env(tt.env)})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(res.Config) {
				t.Errorf("config = %+v", res.Config)
			}
			got := strings.Join(res.Warnings, "\n")
			if (tt.warn == "") != (got == "") || !strings.Contains(got, tt.warn) {
				t.Errorf("warnings %q, want %q", got, tt.warn)
			}
		})
	}
}
