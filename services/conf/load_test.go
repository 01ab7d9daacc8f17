package conf

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaults(t *testing.T) {
	res, err := Load(LoadOptions{Path: writeFile(t, ""), LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Config
	if c.ToolTimeoutS != 60 || c.PythonWorkers != 2 || !c.ToolsWatch || c.MaxSteps != 50 {
		t.Errorf("numeric/bool defaults wrong: %+v", c)
	}
	if !reflect.DeepEqual(c.MCPToolDirs, []string{"builtin"}) || !reflect.DeepEqual(c.SkillDirs, []string{"./skills"}) {
		t.Errorf("list defaults wrong: %v %v", c.MCPToolDirs, c.SkillDirs)
	}
	if c.ProvidersDeep == nil || len(c.ProvidersDeep) != 0 {
		t.Errorf("map default = %v, want empty map", c.ProvidersDeep)
	}
}

func TestFileAndEnv(t *testing.T) {
	file := writeFile(t, `
MCP_TOOL_DIRS: [./tools, builtin]
TOOL_TIMEOUT_S: 30
TOOLS_WATCH: false
PROVIDERS_DEEP:
  gpt: {type: openai, model: gpt-5, api_key: OPENAI_API_KEY}
`)
	tests := []struct {
		name  string
		env   map[string]string
		check func(t *testing.T, c *Config)
	}{
		{"file only", nil, func(t *testing.T, c *Config) {
			if !reflect.DeepEqual(c.MCPToolDirs, []string{"./tools", "builtin"}) || c.ToolTimeoutS != 30 || c.ToolsWatch {
				t.Errorf("file values not applied: %+v", c)
			}
			if c.ProvidersDeep["gpt"].Model != "gpt-5" {
				t.Errorf("provider map not decoded: %+v", c.ProvidersDeep)
			}
		}},
		{"env wins, lists comma-separated", map[string]string{"MCP_TOOL_DIRS": " /a , /b,,", "TOOL_TIMEOUT_S": "5"}, func(t *testing.T, c *Config) {
			if !reflect.DeepEqual(c.MCPToolDirs, []string{"/a", "/b"}) || c.ToolTimeoutS != 5 {
				t.Errorf("env not applied: %v %d", c.MCPToolDirs, c.ToolTimeoutS)
			}
		}},
		{"env map as JSON", map[string]string{"PROVIDERS_DEEP": `{"c":{"type":"anthropic","model":"claude","api_key":"ANTHROPIC_API_KEY"}}`}, func(t *testing.T, c *Config) {
			if c.ProvidersDeep["c"].Type != "anthropic" || len(c.ProvidersDeep) != 1 {
				t.Errorf("env map wrong: %+v", c.ProvidersDeep)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Load(LoadOptions{Path: file, LookupEnv: env(tt.env)})
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, res.Config)
		})
	}
}

func TestInvalidValues(t *testing.T) {
	tests := []struct {
		name, file string
		env        map[string]string
		want       string
	}{
		{"int in env", "", map[string]string{"TOOL_TIMEOUT_S": "soon"}, `config: TOOL_TIMEOUT_S: want an integer, got "soon" (from the environment)`},
		{"below minimum", "PYTHON_WORKERS: 0\n", nil, "config: PYTHON_WORKERS: 0 is below the minimum 1"},
		{"enum", "LOG_LEVEL: loud\n", nil, `config: LOG_LEVEL: "loud" is not one of debug, info, warn, error`},
		{"bool", "", map[string]string{"TOOLS_WATCH": "maybe"}, `config: TOOLS_WATCH: want true or false, got "maybe"`},
		{"url", "NATS_URL: localhost\n", nil, `config: NATS_URL: "localhost" is not an absolute URL`},
		{"secret url is not echoed", "", map[string]string{"DATABASE_URL": "pass:hunter2"}, `config: DATABASE_URL: "***" is not an absolute URL`},
		{"addr", "HTTP_ADDR: nowhere\n", nil, `config: HTTP_ADDR: "nowhere" is not a host:port listen address`},
		{"cidr", "TRUSTED_PROXIES: [10.0.0.0/8, proxy.internal]\n", nil, `config: TRUSTED_PROXIES: "proxy.internal" is not an IP address or CIDR range`},
		{"cidr in env", "", map[string]string{"TRUSTED_PROXIES": "10.0.0.0/33"}, `config: TRUSTED_PROXIES: "10.0.0.0/33" is not an IP address or CIDR range`},
		{"list type", "MCP_TOOL_DIRS: {a: 1}\n", nil, "config: MCP_TOOL_DIRS: want a list"},
		{"map value below minimum", "", map[string]string{"TOOL_TIMEOUTS": `{"slow": 0}`}, "config: TOOL_TIMEOUTS: slow: 0 is below the minimum 1"},
		{"map value type", "TOOL_TIMEOUTS: {slow: soon}\n", nil, "config: TOOL_TIMEOUTS: want a mapping"},
		{"not a mapping", "- a\n- b\n", nil, "the top level must be a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(LoadOptions{Path: writeFile(t, tt.file), LookupEnv: env(tt.env)})
			if err == nil {
				t.Fatal("want an error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("secret leaked: %q", err)
			}
		})
	}
}

func TestUnknownKeyWarns(t *testing.T) {
	res, err := Load(LoadOptions{Path: writeFile(t, "MCP_TOOLS_DIR: [x]\nLOG_LEVEL: debug\n"), LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "MCP_TOOLS_DIR") {
		t.Errorf("warnings = %v", res.Warnings)
	}
}

func TestMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	if _, err := Load(LoadOptions{Path: missing, LookupEnv: env(nil)}); err == nil {
		t.Error("an explicitly named missing file must be an error")
	}
	if _, err := Load(LoadOptions{LookupEnv: env(map[string]string{"MIROBODY_CONFIG": missing})}); err == nil {
		t.Error("a missing MIROBODY_CONFIG file must be an error")
	}
}

func TestRedacted(t *testing.T) {
	res, err := Load(LoadOptions{Path: writeFile(t, ""), LookupEnv: env(map[string]string{"OPENAI_API_KEY": "sk-secret", "SECRET_KEY": goodKey})})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Config.Redacted()
	if r["OPENAI_API_KEY"] != "***" || r["SECRET_KEY"] != "***" || r["ANTHROPIC_API_KEY"] != "" {
		t.Errorf("redaction wrong: %v %v %v", r["OPENAI_API_KEY"], r["SECRET_KEY"], r["ANTHROPIC_API_KEY"])
	}
}

// The shipped config.yaml documents every key, with a comment, and no others;
// and its values are the defaults.
func TestShippedConfigDocumentsEveryKey(t *testing.T) {
	path := filepath.Join("..", "..", "config.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range Keys() {
		if _, ok := doc[k]; !ok {
			t.Errorf("config.yaml lacks key %s", k)
		}
	}
	for k := range doc {
		if !IsKey(k) {
			t.Errorf("config.yaml has unknown key %s", k)
		}
	}
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		if k, _, ok := strings.Cut(l, ":"); ok && IsKey(k) {
			// Each key, or the block of keys it belongs to, is preceded by a comment.
			j := i - 1
			for j >= 0 && lines[j] != "" && !strings.HasPrefix(lines[j], "#") {
				j--
			}
			if j < 0 || !strings.HasPrefix(lines[j], "#") {
				t.Errorf("config.yaml key %s has no comment", k)
			}
		}
	}
	shipped, err := Load(LoadOptions{Path: path, LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defaults, err := Load(LoadOptions{Path: writeFile(t, ""), LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	shipped.Config.Dir, defaults.Config.Dir = "", ""
	if !reflect.DeepEqual(shipped.Config, defaults.Config) {
		t.Errorf("config.yaml values differ from the defaults:\n%+v\n%+v", shipped.Config, defaults.Config)
	}
	if len(shipped.Warnings) != 0 {
		t.Errorf("warnings for the shipped file: %v", shipped.Warnings)
	}
}

func TestToolEnviron(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    []string
		errText string
	}{
		{"defaults when unset", map[string]string{"SECRET_KEY": goodKey, "OPENAI_API_KEY": "sk"},
			[]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "TZ=UTC"}, ""},
		{"process values and TOOL_ENV", map[string]string{"PATH": "/opt/bin", "HOME": "/home/m", "LANG": "de_DE.UTF-8", "TZ": "Europe/Berlin",
			"TOOL_ENV": "WEATHER_KEY,UNSET_VAR,PATH,OPENAI_API_KEY", "WEATHER_KEY": "w", "OPENAI_API_KEY": "sk", "SECRET_KEY": goodKey},
			[]string{"PATH=/opt/bin", "HOME=/home/m", "LANG=de_DE.UTF-8", "TZ=Europe/Berlin", "WEATHER_KEY=w", "OPENAI_API_KEY=sk"}, ""},
		{"own secrets refused", map[string]string{"TOOL_ENV": "SECRET_KEY"}, nil, "config: TOOL_ENV: SECRET_KEY is a Mirobody secret"},
		{"bad name", map[string]string{"TOOL_ENV": "A-B"}, nil, `config: TOOL_ENV: "A-B" is not an environment variable name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Load(LoadOptions{Path: writeFile(t, ""), LookupEnv: env(tt.env)})
			if tt.errText != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("err %v, want %q", err, tt.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res.Config.ToolEnviron, tt.want) {
				t.Errorf("ToolEnviron = %q, want %q", res.Config.ToolEnviron, tt.want)
			}
		})
	}
}

// Providers name their key freely: OpenRouter's beside OpenAI's, resolved
// from the environment or the file, never echoed.
func TestProviderKeys(t *testing.T) {
	file := writeFile(t, `
PROVIDERS_DEEP:
  openai: {type: openai, model: gpt-5, api_key: OPENAI_API_KEY}
  openrouter: {type: openai, model: x, api_key: OPENROUTER_API_KEY, base_url: https://openrouter.ai/api/v1}
  ollama: {type: openai, model: llama, base_url: http://127.0.0.1:11434/v1}
PROVIDERS_BASE:
  filed: {type: openai-responses, model: y, api_key: FILED_KEY}
FILED_KEY: from-file
`)
	res, err := Load(LoadOptions{Path: file, LookupEnv: env(map[string]string{"OPENAI_API_KEY": "sk-oa", "OPENROUTER_API_KEY": "sk-or"})})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"OPENAI_API_KEY": "sk-oa", "OPENROUTER_API_KEY": "sk-or", "FILED_KEY": "from-file"}
	if !reflect.DeepEqual(res.Config.ProviderKeys, want) {
		t.Errorf("ProviderKeys = %v, want %v", res.Config.ProviderKeys, want)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("a key named by a provider is not unknown: %v", res.Warnings)
	}
	for k, v := range res.Config.Redacted() {
		if s := fmt.Sprint(v); strings.Contains(s, "sk-or") || strings.Contains(s, "from-file") {
			t.Errorf("Redacted %s shows a provider secret: %s", k, s)
		}
	}

	res, err = Load(LoadOptions{Path: file, LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.Config.ProviderKeys["OPENROUTER_API_KEY"]; ok || len(res.Config.ProviderKeys) != 1 {
		t.Errorf("unset keys must be absent: %v", res.Config.ProviderKeys)
	}

	for _, tt := range []struct{ file, want string }{
		{"PROVIDERS_DEEP: {x: {type: openai, model: m, api_key: 'sk-pasted-secret'}}\n", "config: PROVIDERS_DEEP: provider x: api_key must name the key holding the secret"},
		{"PROVIDERS_DEEP: {x: {type: openai, model: m, api_key: LOG_LEVEL}}\n", "config: PROVIDERS_DEEP: provider x: api_key LOG_LEVEL names a config key that is not a secret"},
	} {
		_, err := Load(LoadOptions{Path: writeFile(t, tt.file), LookupEnv: env(nil)})
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "sk-pasted") {
			t.Errorf("err %v, want %q without the value", err, tt.want)
		}
	}
}

func TestToolTimeout(t *testing.T) {
	res, err := Load(LoadOptions{Path: writeFile(t, "TOOL_TIMEOUT_S: 30\nTOOL_TIMEOUTS: {render: 300, ping: 2}\n"), LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Config
	for name, want := range map[string]time.Duration{"render": 300 * time.Second, "ping": 2 * time.Second, "other": 30 * time.Second} {
		if got := c.ToolTimeout(name); got != want {
			t.Errorf("ToolTimeout(%s) = %s, want %s", name, got, want)
		}
	}
	if got := c.MaxToolTimeout(); got != 300*time.Second {
		t.Errorf("MaxToolTimeout = %s, want 300s", got)
	}
}

func TestMissingDirs(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, "x: 1\n")
	got := MissingDirs([]string{dir, filepath.Join(dir, "absent"), file})
	if len(got) != 2 || !strings.Contains(got[0].Error(), "absent") || !strings.Contains(got[1].Error(), "not a folder") {
		t.Errorf("MissingDirs = %v, want the absent folder and the file", got)
	}
}
