package conf

import (
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// envName is what a TOOL_ENV entry or a provider's api_key may be: the
// name of an environment variable.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// toolEnvDefaults are the variables every tool host gets, with the value
// used when the registry's own environment lacks them: a plain PATH, a
// writable HOME, UTF-8 text and UTC.
var toolEnvDefaults = []struct{ name, def string }{
	{"PATH", "/usr/local/bin:/usr/bin:/bin"},
	{"HOME", "/tmp"},
	{"LANG", "C.UTF-8"},
	{"TZ", "UTC"},
}

// resolveToolEnv builds Config.ToolEnviron. Mirobody's own secrets may not
// be passed to tools; provider keys may, when an operator lists them.
func resolveToolEnv(c *Config, lookup func(string) (string, bool)) error {
	secret := map[string]bool{}
	for _, f := range fields() {
		if f.secret && !strings.HasSuffix(f.key, "_API_KEY") {
			secret[f.key] = true
		}
	}
	env := make([]string, 0, len(toolEnvDefaults)+len(c.ToolEnv))
	seen := map[string]bool{}
	for _, d := range toolEnvDefaults {
		v, ok := lookup(d.name)
		if !ok || v == "" {
			v = d.def
		}
		env = append(env, d.name+"="+v)
		seen[d.name] = true
	}
	for _, name := range c.ToolEnv {
		if !envName.MatchString(name) {
			return fmt.Errorf("%q is not an environment variable name", name)
		}
		if secret[name] {
			return fmt.Errorf("%s is a Mirobody secret and is never passed to tools", name)
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		if v, ok := lookup(name); ok {
			env = append(env, name+"="+v)
		}
	}
	c.ToolEnviron = env
	return nil
}

// resolveProviderKeys fills Config.ProviderKeys and returns the names it
// looked for, so that Load does not call a file entry holding one an
// unknown key.
func resolveProviderKeys(c *Config, lookup func(string) (string, bool), file map[string]yaml.Node) (map[string]bool, error) {
	v := reflect.ValueOf(c).Elem()
	byKey := map[string]field{}
	for _, f := range fields() {
		byKey[f.key] = f
	}
	used := map[string]bool{}
	c.ProviderKeys = map[string]string{}
	// The built-in provider keys resolve even when no entry names them,
	// for agent-svc's default entries.
	for _, f := range fields() {
		if f.secret && strings.HasSuffix(f.key, "_API_KEY") {
			if s := v.FieldByIndex(f.index).String(); s != "" {
				c.ProviderKeys[f.key] = s
			}
		}
	}
	for _, set := range []struct {
		key     string
		entries map[string]Provider
	}{{"PROVIDERS_DEEP", c.ProvidersDeep}, {"PROVIDERS_BASE", c.ProvidersBase}} {
		names := make([]string, 0, len(set.entries))
		for n := range set.entries {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			key := set.entries[n].APIKey
			if key == "" {
				continue
			}
			if !envName.MatchString(key) {
				// Not echoed: a value here is often the secret itself.
				return nil, fmt.Errorf("%s: provider %s: api_key must name the key holding the secret (such as OPENROUTER_API_KEY), not hold it", set.key, n)
			}
			if f, isKey := byKey[key]; isKey {
				// A config key only holds a provider secret when it is one.
				if !f.secret || f.typeString != "string" {
					return nil, fmt.Errorf("%s: provider %s: api_key %s names a config key that is not a secret", set.key, n, key)
				}
				if s := v.FieldByIndex(f.index).String(); s != "" {
					c.ProviderKeys[key] = s
				}
				continue
			}
			used[key] = true
			if s, ok := lookup(key); ok && s != "" {
				c.ProviderKeys[key] = s
			} else if node, ok := file[key]; ok && node.Kind == yaml.ScalarNode && node.Value != "" {
				c.ProviderKeys[key] = node.Value
			}
		}
	}
	return used, nil
}
