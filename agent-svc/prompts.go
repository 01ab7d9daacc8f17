package agentsvc

import (
	"cmp"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"

	"github.com/mirobody/mirobody-go/agent-svc/internal/turn"
	"github.com/mirobody/mirobody-go/services/agent"
)

// promptSet is one agent's system prompts: the default, and the named
// ones of PROMPTS_{NAME} that a turn picks with prompt_name.
type promptSet struct {
	// def is PROMPT_{NAME}, else the first of PROMPTS_{NAME}, else nil
	// (the agent's built-in prompt).
	def   *template.Template
	named map[string]*template.Template
	// names are the named prompts in configuration order.
	names []string
}

// promptFileExts are the extensions that mark a one-line PROMPT_{NAME}
// value as a file even when the file is missing, so that a typo stops
// start-up instead of becoming the literal system prompt.
var promptFileExts = []string{".jinja", ".jinja2", ".j2", ".tmpl", ".tpl", ".txt", ".md", ".prompt"}

// loadPrompts reads an agent's prompts. single is PROMPT_{NAME}: a
// template, or the path of a file holding one (relative to dir, the config
// file's folder). list is PROMPTS_{NAME}: "path" or "path@name" entries; a
// missing file is a warning, as upstream Mirobody skips it too. A template
// that does not parse stops start-up, naming the key and the file.
func loadPrompts(dir string, agentName agent.Name, single string, list []string, log *slog.Logger) (*promptSet, error) {
	ps := &promptSet{named: map[string]*template.Template{}}
	singleKey, listKey := "PROMPT_"+strings.ToUpper(string(agentName)), "PROMPTS_"+strings.ToUpper(string(agentName))
	if strings.TrimSpace(single) != "" {
		text, file := single, ""
		if path, ok := promptPath(dir, single); ok {
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("%s: reading the prompt file: %w", singleKey, err)
			}
			text, file = string(b), path
		}
		t, err := parsePrompt(singleKey, file, text, log)
		if err != nil {
			return nil, err
		}
		ps.def = t
	}
	for _, entry := range list {
		file, name, _ := strings.Cut(entry, "@")
		file, name = strings.TrimSpace(file), strings.TrimSpace(name)
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		if name == "" {
			name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		}
		b, err := os.ReadFile(file)
		if err != nil {
			log.Warn("a prompt file of the configuration cannot be read; that prompt is skipped", "key", listKey, "file", file, "err", err)
			continue
		}
		t, err := parsePrompt(listKey, file, string(b), log)
		if err != nil {
			return nil, err
		}
		if _, dup := ps.named[name]; !dup {
			ps.names = append(ps.names, name)
		}
		ps.named[name] = t
	}
	if ps.def == nil && len(ps.names) > 0 {
		ps.def = ps.named[ps.names[0]]
	}
	return ps, nil
}

// promptPath reports whether a PROMPT_{NAME} value names a file, and
// which: one line with no template action that is an existing file or
// ends in a template file extension.
func promptPath(dir, value string) (string, bool) {
	v := strings.TrimSpace(value)
	if strings.ContainsAny(v, "\n") || strings.Contains(v, "{{") {
		return "", false
	}
	path := v
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		return path, true
	}
	return path, slices.Contains(promptFileExts, strings.ToLower(filepath.Ext(v)))
}

// parsePrompt parses a prompt template; a Jinja file (upstream's prompts)
// is translated first.
func parsePrompt(key, file, text string, log *slog.Logger) (*template.Template, error) {
	if isJinja(file) {
		var empty []string
		var err error
		if text, empty, err = fromJinja(text); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", key, file, err)
		}
		if len(empty) > 0 {
			log.Warn("a Jinja prompt uses variables that are empty here", "key", key, "file", file, "variables", empty)
		}
	}
	t, err := turn.ParsePrompt(text, "")
	if err != nil {
		if file != "" {
			return nil, fmt.Errorf("%s: %s: %w", key, file, err)
		}
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return t, nil
}

// pick returns the template a turn's prompt_name selects (nil: the
// agent's default) and, for a name that is not configured, a notice.
func (ps *promptSet) pick(name string) (*template.Template, string) {
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, ""
	}
	if t, ok := ps.named[name]; ok {
		return t, ""
	}
	if len(ps.names) == 0 {
		return nil, fmt.Sprintf("prompt %q is not configured; the default prompt is used", name)
	}
	return nil, fmt.Sprintf("prompt %q is not configured (configured: %s); the default prompt is used", name, strings.Join(ps.names, ", "))
}

func isJinja(file string) bool {
	return slices.Contains([]string{".jinja", ".jinja2", ".j2"}, strings.ToLower(filepath.Ext(file)))
}

// jinjaVars maps upstream Mirobody's prompt variables to our PromptData.
var jinjaVars = map[string]string{
	"current_time": ".Date", "current_date": ".Date", "date": ".Date",
	"language": ".Language", "timezone": ".Timezone",
	"user_name": `(index .Profile "name")`,
}

var jinjaTag = regexp.MustCompile(`\{\{-?\s*(.*?)\s*-?\}\}|\{%-?\s*(.*?)\s*-?%\}|\{#.*?#\}`)
var jinjaName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// fromJinja translates the Jinja that upstream's prompts use ({{ var }},
// {% if var %}, {% else %}, {% endif %}, {# comments #}) into a Go
// template. Variables we do not have render empty and are returned, so
// that start-up can name them; other Jinja is an error.
func fromJinja(src string) (string, []string, error) {
	var empty []string
	var bad error
	out := jinjaTag.ReplaceAllStringFunc(src, func(tag string) string {
		m := jinjaTag.FindStringSubmatch(tag)
		expr := func(name string) string {
			if v, ok := jinjaVars[name]; ok {
				return v
			}
			if !slices.Contains(empty, name) {
				empty = append(empty, name)
			}
			return `""`
		}
		switch {
		case strings.HasPrefix(tag, "{#"):
			return ""
		case strings.HasPrefix(tag, "{{"):
			if !jinjaName.MatchString(m[1]) {
				bad = cmp.Or(bad, fmt.Errorf("Jinja expression {{ %s }} is not supported (only {{ variable }})", m[1]))
				return tag
			}
			return "{{" + expr(m[1]) + "}}"
		}
		word, rest, _ := strings.Cut(m[2], " ")
		rest = strings.TrimSpace(rest)
		switch {
		case word == "if" && jinjaName.MatchString(rest):
			return "{{if " + expr(rest) + "}}"
		case word == "elif" && jinjaName.MatchString(rest):
			return "{{else if " + expr(rest) + "}}"
		case word == "else" && rest == "":
			return "{{else}}"
		case word == "endif" && rest == "":
			return "{{end}}"
		}
		bad = cmp.Or(bad, fmt.Errorf("Jinja statement {%% %s %%} is not supported (only if, elif, else and endif on a variable)", m[2]))
		return tag
	})
	return out, empty, bad
}
