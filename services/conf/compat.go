package conf

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Compatibility with upstream Mirobody's config.yaml (README "Coming from
// Mirobody" shows these tables; design.md says why they look like this).

// aliases maps upstream Mirobody's keys to ours where the meaning is the
// same. Our own key wins when both are set.
var aliases = map[string]string{
	"ALLOWED_TOOLS_BASELINE":    "ALLOWED_TOOLS_BASE",
	"DISALLOWED_TOOLS_BASELINE": "DISALLOWED_TOOLS_BASE",
	"PROMPTS_BASELINE":          "PROMPTS_BASE",
}

// valueAliases maps upstream's values of an enum key to ours; enum values
// are otherwise compared in any case.
var valueAliases = map[string]map[string]string{
	"LOG_LEVEL":     {"warning": "warn", "critical": "error", "fatal": "error"},
	"DEFAULT_AGENT": {"baseline": "base"},
}

// inert lists upstream keys that do nothing here, each group with what to
// do instead. An entry ending in "_" is a prefix. Such a key is warned
// about only when it holds a value, since an empty one loses nothing.
var inert = []struct {
	keys []string
	hint string
}{
	{[]string{"PG_", "DATABASE_DECRYPTION_KEY"}, "set DATABASE_URL (a postgres:// URL) instead"},
	{[]string{"REDIS_"}, "not needed: NATS and PostgreSQL hold what Redis did"},
	{[]string{"HTTP_HOST", "HTTP_PORT"}, "set HTTP_ADDR (host:port) instead"},
	{[]string{"HTTP_SERVER_NAME", "HTTP_ROOT", "HTTP_URI_PREFIX", "HTTP_HEADERS", "MCP_FRONTEND_URL", "DATA_PUBLIC_URL",
		"QR_LOGIN_URL", "MIROBODY_WEB_CONFIG", "USER_INFO_UPDATER"}, "the gateway serves its own web app; set HTTP_ADDR, MCP_PUBLIC_URL and ALLOWED_ORIGINS"},
	{[]string{"REQUEST_RATE_LIMITER"}, "set RATE_LIMIT_ACCOUNT and RATE_LIMIT_IP instead"},
	{[]string{"JWT_"}, "access tokens are Ed25519 JWTs whose keys SECRET_KEY seals; set SECRET_KEY"},
	{[]string{"LOG_NAME", "LOG_DIR"}, "logs go to stderr; set LOG_FORMAT"},
	{[]string{"AGENT_DIRS", "PROVIDER_DIRS"}, "not supported: tools come from MCP_TOOL_DIRS and skills from SKILL_DIRS"},
	{[]string{"PROVIDERS_BASELINE"}, "the Base agent's provider calls our /mcp itself: set PROVIDERS_BASE with type openai-responses or anthropic"},
	{[]string{"S3_", "EMAIL_", "GOOGLE_CLIENT_ID", "FIREBASE_", "APPLE_", "VITAL_", "RENPHO_", "GARMIN_", "WHOOP_", "FRONTIERX_",
		"OAUTH_TEMP_TTL_SECONDS", "ENABLE_INDICATOR_EXTRACTION", "DASHSCOPE_API_KEY", "JINA_API_KEY", "E2B_API_KEY", "DEFAULT_TIMEZONE",
		"CONFIG_ENCRYPTION_KEY", "GEMINI_API_VERSION"}, "upstream features this project does not have; remove them"},
}

// agentKeyPrefixes are upstream's per-agent keys, KEY_{NAME}.
var agentKeyPrefixes = []string{"ALLOWED_TOOLS_", "DISALLOWED_TOOLS_", "PROMPTS_", "PROVIDERS_"}

// inertHint returns what to do about an upstream key that does nothing
// here, or "" when key is not one.
func inertHint(key string) string {
	for _, g := range inert {
		for _, k := range g.keys {
			if key == k || strings.HasSuffix(k, "_") && strings.HasPrefix(key, k) {
				return g.hint
			}
		}
	}
	for _, p := range agentKeyPrefixes {
		if name, ok := strings.CutPrefix(key, p); ok && name != "" && !strings.Contains(name, "_") {
			return fmt.Sprintf("there is no %s agent here (DEEP and BASE only; a turn naming another agent runs DEFAULT_AGENT)", name)
		}
	}
	return ""
}

// emptyNode reports whether a YAML value holds nothing: null, "", [] or {}.
func emptyNode(n *yaml.Node) bool {
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Tag == "!!null" || n.Value == ""
	case yaml.SequenceNode, yaml.MappingNode:
		return len(n.Content) == 0
	}
	return false
}

// unknownWarnings returns the warnings for the file's keys that are not
// ours: one line per group of upstream keys that do nothing here, naming
// them and what to do, then one per truly unknown key.
func unknownWarnings(file map[string]yaml.Node, known map[string]bool, path string) []string {
	byHint := map[string][]string{}
	var hints, unknown []string
	for k, n := range file {
		if known[k] {
			continue
		}
		if h := inertHint(k); h != "" {
			if emptyNode(&n) {
				continue
			}
			if byHint[h] == nil {
				hints = append(hints, h)
			}
			byHint[h] = append(byHint[h], k)
			continue
		}
		unknown = append(unknown, k)
	}
	sort.Strings(unknown)
	var out []string
	for _, h := range hints {
		keys := byHint[h]
		sort.Strings(keys)
		out = append(out, fmt.Sprintf("upstream Mirobody config keys %s in %s do nothing here: %s", strings.Join(keys, ", "), path, h))
	}
	sort.Strings(out) // by the keys each line names
	for _, k := range unknown {
		out = append(out, fmt.Sprintf("unknown config key %s in %s is ignored", k, path))
	}
	return out
}

// normalizeEnum lower-cases an enum value and maps upstream's spellings.
func normalizeEnum(key, s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if v, ok := valueAliases[key][s]; ok {
		return v
	}
	return s
}

// providerTypes are the types each agent's providers may have.
var providerTypes = map[string][]string{
	"PROVIDERS_DEEP": {"openai", "anthropic", "google-genai"},
	"PROVIDERS_BASE": {"openai-responses", "anthropic"},
}

// providerFields are the fields a provider entry may have; others are
// warned about.
var providerFields = []string{"type", "llm_type", "model", "api_key", "base_url", "temperature", "max_tokens", "max_completion_tokens"}

// normalizeProviders folds upstream's llm_type into type, gives
// google-genai its usual key, and checks every type, so that a provider no
// turn could use stops start-up instead of failing at turn time.
func normalizeProviders(c *Config) error {
	for _, set := range []struct {
		key     string
		entries map[string]Provider
	}{{"PROVIDERS_DEEP", c.ProvidersDeep}, {"PROVIDERS_BASE", c.ProvidersBase}} {
		for name, p := range set.entries {
			p.Type = strings.ToLower(strings.TrimSpace(p.Type))
			if lt := strings.ToLower(strings.TrimSpace(p.LLMType)); lt != "" {
				if p.Type != "" && p.Type != lt {
					return fmt.Errorf("%s: provider %s: type %q and llm_type %q disagree; keep one", set.key, name, p.Type, lt)
				}
				p.Type, p.LLMType = lt, ""
			}
			allowed := providerTypes[set.key]
			if !slices.Contains(allowed, p.Type) {
				if p.Type == "" {
					return fmt.Errorf("%s: provider %s has no type (type or llm_type: %s)", set.key, name, strings.Join(allowed, ", "))
				}
				return fmt.Errorf("%s: provider %s: type %q is not one of %s", set.key, name, p.Type, strings.Join(allowed, ", "))
			}
			if p.Type == "google-genai" && p.APIKey == "" {
				p.APIKey = "GOOGLE_API_KEY"
			}
			if p.Temperature != nil && (*p.Temperature < 0 || *p.Temperature > 2) {
				return fmt.Errorf("%s: provider %s: temperature %v is not between 0 and 2", set.key, name, *p.Temperature)
			}
			if p.MaxTokens < 0 || p.MaxCompletionTokens < 0 {
				return fmt.Errorf("%s: provider %s: max_tokens and max_completion_tokens may not be negative", set.key, name)
			}
			set.entries[name] = p
		}
	}
	return nil
}

// providerFieldWarnings names the fields of provider entries in the file
// that do nothing here (upstream's input_price, response_with_tools...).
func providerFieldWarnings(file map[string]yaml.Node, path string) []string {
	var out []string
	for _, key := range []string{"PROVIDERS_DEEP", "PROVIDERS_BASE"} {
		n, ok := file[key]
		if !ok || n.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			entry := n.Content[i+1]
			if entry.Kind != yaml.MappingNode {
				continue
			}
			for j := 0; j+1 < len(entry.Content); j += 2 {
				if f := entry.Content[j].Value; !slices.Contains(providerFields, f) {
					out = append(out, fmt.Sprintf("%s: provider %s: field %s in %s does nothing here and is ignored", key, n.Content[i].Value, f, path))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}
