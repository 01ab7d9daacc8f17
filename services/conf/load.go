package conf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// LoadOptions says where configuration comes from.
type LoadOptions struct {
	// Path is the config file. Empty means MIROBODY_CONFIG, else
	// ./config.yaml when it exists, else defaults only. A Path that was
	// named explicitly must exist.
	Path string
	// LookupEnv reads the environment; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// Result is a loaded configuration together with what the loader noticed.
type Result struct {
	Config *Config
	// File is the config file that was read, or "".
	File string
	// Warnings lists non-fatal problems, such as unknown keys.
	Warnings []string
}

// Load reads the configuration. An invalid value is an error whose text is
// one line naming the key.
func Load(opts LoadOptions) (*Result, error) {
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	path, explicit := opts.Path, opts.Path != ""
	if path == "" {
		if p, ok := lookup("MIROBODY_CONFIG"); ok && p != "" {
			path, explicit = p, true
		} else {
			path = "config.yaml"
		}
	}
	res := &Result{Config: &Config{}}
	file := map[string]yaml.Node{}
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		res.File = path
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("config: %s: %v", path, err)
		}
		if err := mapping(&doc, file); err != nil {
			return nil, fmt.Errorf("config: %s: %v", path, err)
		}
	case errors.Is(err, fs.ErrNotExist) && !explicit:
	default:
		return nil, fmt.Errorf("config: reading %s: %v", path, err)
	}

	v := reflect.ValueOf(res.Config).Elem()
	known := map[string]bool{}
	for _, f := range fields() {
		known[f.key] = true
		dst := v.FieldByIndex(f.index)
		names := append([]string{f.key}, aliasesOf(f.key)...)
		for _, n := range names[1:] {
			known[n] = true
			if _, ok := file[n]; ok {
				if _, both := file[f.key]; both {
					res.Warnings = append(res.Warnings, fmt.Sprintf("config keys %s and %s (upstream's name for it) are both in %s; %s is ignored", f.key, n, path, n))
				}
			}
		}
		if key, raw, ok := lookupAny(lookup, names); ok {
			if err := setString(dst, raw, true); err != nil {
				return nil, fmt.Errorf("config: %s: %v (from the environment)", key, err)
			}
		} else if key, node, ok := fileAny(file, names); ok {
			if err := setNode(dst, &node); err != nil {
				return nil, fmt.Errorf("config: %s: %v (in %s)", key, err, path)
			}
		} else if err := setString(dst, f.def, false); err != nil {
			panic(fmt.Sprintf("conf: bad default for %s: %v", f.key, err))
		}
		if dst.Kind() == reflect.Slice && dst.Len() == 0 {
			dst.Set(reflect.Zero(dst.Type())) // [] and "" both mean an empty list
		}
		if f.enum != nil {
			dst.SetString(normalizeEnum(f.key, dst.String()))
		}
		if err := f.check(dst); err != nil {
			return nil, fmt.Errorf("config: %s: %v", f.key, err)
		}
	}
	if res.File != "" {
		res.Config.Dir = filepath.Dir(res.File)
	}
	if err := CheckSecretKey(res.Config.SecretKey); err != nil {
		return nil, fmt.Errorf("config: SECRET_KEY: %v", err)
	}
	if err := resolveToolEnv(res.Config, lookup); err != nil {
		return nil, fmt.Errorf("config: TOOL_ENV: %v", err)
	}
	if err := normalizeProviders(res.Config); err != nil {
		return nil, fmt.Errorf("config: %v", err)
	}
	providerKeys, err := resolveProviderKeys(res.Config, lookup, file)
	if err != nil {
		return nil, fmt.Errorf("config: %v", err)
	}
	for k := range providerKeys {
		known[k] = true
	}
	res.Warnings = append(res.Warnings, providerFieldWarnings(file, path)...)
	res.Warnings = append(res.Warnings, unknownWarnings(file, known, path)...)
	return res, nil
}

// aliasesOf returns upstream's names for key, sorted.
func aliasesOf(key string) []string {
	var out []string
	for a, k := range aliases {
		if k == key {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}

// lookupAny returns the first of names set in the environment.
func lookupAny(lookup func(string) (string, bool), names []string) (string, string, bool) {
	for _, n := range names {
		if raw, ok := lookup(n); ok {
			return n, raw, true
		}
	}
	return "", "", false
}

// fileAny returns the first of names present in the file.
func fileAny(file map[string]yaml.Node, names []string) (string, yaml.Node, bool) {
	for _, n := range names {
		if node, ok := file[n]; ok {
			return n, node, true
		}
	}
	return "", yaml.Node{}, false
}

// mapping flattens a YAML document's top-level mapping into m.
func mapping(doc *yaml.Node, m map[string]yaml.Node) error {
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil
	}
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("the top level must be a mapping of KEY: value")
	}
	written := map[string]string{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		// Keys are case-insensitive, as upstream Mirobody's are.
		k := strings.ToUpper(strings.TrimSpace(root.Content[i].Value))
		if prev, dup := written[k]; dup {
			return fmt.Errorf("keys %s and %s are the same key (keys are case-insensitive)", prev, root.Content[i].Value)
		}
		written[k] = root.Content[i].Value
		m[k] = *root.Content[i+1]
	}
	return nil
}

// field describes one tagged Config field.
type field struct {
	key, def   string
	index      []int
	enum       []string
	min        *int
	isURL      bool
	isAddr     bool
	isCIDR     bool
	secret     bool
	typeString string
}

func fields() []field {
	t := reflect.TypeOf(Config{})
	out := make([]field, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		key := sf.Tag.Get("key")
		if key == "" {
			continue
		}
		f := field{key: key, def: sf.Tag.Get("default"), index: sf.Index, isURL: sf.Tag.Get("url") == "true",
			isAddr: sf.Tag.Get("addr") == "true", isCIDR: sf.Tag.Get("cidr") == "true", secret: sf.Tag.Get("secret") == "true", typeString: sf.Type.String()}
		if e := sf.Tag.Get("enum"); e != "" {
			f.enum = strings.Split(e, "|")
		}
		if m := sf.Tag.Get("min"); m != "" {
			n, _ := strconv.Atoi(m)
			f.min = &n
		}
		out = append(out, f)
	}
	return out
}

// Keys returns every configuration key, in declaration order.
func Keys() []string {
	all := fields()
	keys := make([]string, len(all))
	for i, f := range all {
		keys[i] = f.key
	}
	return keys
}

// IsKey reports whether key is a configuration key.
func IsKey(key string) bool { return slices.Contains(Keys(), key) }

func (f field) check(v reflect.Value) error {
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if f.enum != nil && !slices.Contains(f.enum, s) {
			return fmt.Errorf("%q is not one of %s", s, strings.Join(f.enum, ", "))
		}
		if f.isURL && s != "" {
			u, err := url.Parse(s)
			if err != nil || u.Scheme == "" || u.Host == "" {
				return fmt.Errorf("%q is not an absolute URL (scheme://host...)", redactIf(f.secret, s))
			}
		}
		if f.isAddr && s != "" {
			if _, port, err := net.SplitHostPort(s); err != nil || port == "" {
				return fmt.Errorf("%q is not a host:port listen address", s)
			}
		}
	case reflect.Int:
		if f.min != nil && v.Int() < int64(*f.min) {
			return fmt.Errorf("%d is below the minimum %d", v.Int(), *f.min)
		}
	case reflect.Map:
		// A minimum applies to each value of a map of integers.
		if f.min == nil || v.Type().Elem().Kind() != reflect.Int {
			return nil
		}
		for _, k := range v.MapKeys() {
			if n := v.MapIndex(k).Int(); n < int64(*f.min) {
				return fmt.Errorf("%v: %d is below the minimum %d", k, n, *f.min)
			}
		}
	case reflect.Slice:
		for i := 0; f.isCIDR && i < v.Len(); i++ {
			s := v.Index(i).String()
			if _, err := netip.ParsePrefix(s); err != nil {
				if _, err := netip.ParseAddr(s); err != nil || strings.Contains(s, "%") {
					return fmt.Errorf("%q is not an IP address or CIDR range", s)
				}
			}
		}
	}
	return nil
}

func redactIf(secret bool, s string) string {
	if secret {
		return "***"
	}
	return s
}

// setString parses raw (an environment value or a tag default) into v.
func setString(v reflect.Value, raw string, fromEnv bool) error {
	switch v.Kind() {
	case reflect.String:
		v.SetString(raw)
	case reflect.Int:
		if raw == "" {
			v.SetInt(0)
			return nil
		}
		n, err := strconv.Atoi(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("want an integer, got %q", raw)
		}
		v.SetInt(int64(n))
	case reflect.Bool:
		if raw == "" {
			v.SetBool(false)
			return nil
		}
		b, err := strconv.ParseBool(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("want true or false, got %q", raw)
		}
		v.SetBool(b)
	case reflect.Slice:
		var list []string
		for _, s := range strings.Split(raw, ",") {
			if s = strings.TrimSpace(s); s != "" {
				list = append(list, s)
			}
		}
		v.Set(reflect.ValueOf(list))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		if strings.TrimSpace(raw) != "" {
			p := reflect.New(v.Type())
			if err := json.Unmarshal([]byte(raw), p.Interface()); err != nil {
				return fmt.Errorf("want a JSON object: %v", err)
			}
			m = p.Elem()
		}
		v.Set(m)
	default:
		return fmt.Errorf("unsupported type %s", v.Type())
	}
	return nil
}

// setNode decodes a YAML value into v.
func setNode(v reflect.Value, n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return setString(v, "", false)
	}
	switch v.Kind() {
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			return fmt.Errorf("want a string")
		}
		v.SetString(n.Value)
		return nil
	case reflect.Slice:
		if n.Kind == yaml.ScalarNode {
			return setString(v, n.Value, false)
		}
	}
	p := reflect.New(v.Type())
	if err := n.Decode(p.Interface()); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return fmt.Errorf("want %s: %s", kindName(v), strings.Join(te.Errors, "; "))
		}
		return err
	}
	v.Set(p.Elem())
	return nil
}

func kindName(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Int:
		return "an integer"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "a list"
	case reflect.Map:
		return "a mapping"
	}
	return v.Type().String()
}

// Redacted returns every key with its value, secrets masked, for /debug
// output and startup logs.
func (c *Config) Redacted() map[string]any {
	v := reflect.ValueOf(c).Elem()
	out := map[string]any{}
	for _, f := range fields() {
		val := v.FieldByIndex(f.index).Interface()
		if f.secret {
			if s, _ := val.(string); s != "" {
				val = "***"
			}
		}
		out[f.key] = val
	}
	return out
}
