package agentsvc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/agent-svc/internal/turn"
	"github.com/mirobody/mirobody-go/services/servicetest"
)

func render(t *testing.T, ps *promptSet, name string) string {
	t.Helper()
	tmpl, _ := ps.pick(name)
	if tmpl == nil {
		tmpl = ps.def
	}
	s, err := turn.RenderPrompt(tmpl, turn.PromptData{Date: "2026-12-03", Language: "German"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// PROMPT_DEEP may name a file (relative to the config) and PROMPTS_DEEP
// lists more that a turn picks with prompt_name, as upstream allows.
func TestLoadPrompts(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		must := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if must != nil {
			t.Fatal(must)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("prompts/main.tmpl", "Main prompt, {{.Date}}.")
	write("prompts/health.jinja", "{# upstream #}Health agent {{ agent_name }} on {{ current_time }}.{% if language %} Speak {{ language }}.{% endif %}")
	write("prompts/short.txt", "Short, in {{.Language}}.")
	write("prompts/broken.tmpl", "{{.Date")
	write("prompts/loop.jinja", "{% for x in items %}{{ x }}{% endfor %}")

	log, logs := servicetest.CaptureLogger(t)
	ps, err := loadPrompts(dir, "deep", "prompts/main.tmpl", []string{"prompts/health.jinja", "prompts/short.txt@short", "prompts/gone.jinja"}, log)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(t, ps, ""); got != "Main prompt, 2026-12-03." {
		t.Errorf("PROMPT_DEEP file: %q", got)
	}
	if got := render(t, ps, "health"); got != "Health agent  on 2026-12-03. Speak German." {
		t.Errorf("jinja prompt: %q", got)
	}
	if got := render(t, ps, "short"); got != "Short, in German." {
		t.Errorf("prompt@name: %q", got)
	}
	if _, notice := ps.pick("other"); notice != `prompt "other" is not configured (configured: health, short); the default prompt is used` {
		t.Errorf("notice %q", notice)
	}
	for _, want := range []string{"key=PROMPTS_DEEP file=" + filepath.Join(dir, "prompts/gone.jinja"), "variables=[agent_name]"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q: %s", want, logs.String())
		}
	}

	// Without PROMPT_DEEP the first listed prompt is the default; an
	// inline template stays a template.
	if ps, err = loadPrompts(dir, "deep", "", []string{"prompts/short.txt"}, log); err != nil || render(t, ps, "") != "Short, in German." {
		t.Errorf("first listed prompt as default: %v", err)
	}
	if ps, err = loadPrompts(dir, "deep", "Inline {{.Date}}", nil, log); err != nil || render(t, ps, "") != "Inline 2026-12-03" {
		t.Errorf("inline prompt: %v", err)
	}

	for _, c := range []struct {
		single string
		list   []string
		want   string
	}{
		{"prompts/missing.jinja", nil, "PROMPT_DEEP: reading the prompt file"},
		{"prompts/broken.tmpl", nil, "PROMPT_DEEP: " + filepath.Join(dir, "prompts/broken.tmpl")},
		{"", []string{"prompts/loop.jinja"}, "PROMPTS_DEEP: " + filepath.Join(dir, "prompts/loop.jinja") + ": Jinja statement {% for x in items %} is not supported"},
	} {
		if _, err := loadPrompts(dir, "deep", c.single, c.list, log); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("loadPrompts(%q, %v): %v, want %q", c.single, c.list, err, c.want)
		}
	}
}
