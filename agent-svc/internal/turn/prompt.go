package turn

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"
	"time"
)

// ParsePrompt parses a prompt template (PROMPT_DEEP, PROMPT_BASE); empty
// text means fallback, the agent's built-in prompt.
func ParsePrompt(text, fallback string) (*template.Template, error) {
	if strings.TrimSpace(text) == "" {
		text = fallback
	}
	t, err := template.New("prompt").Option("missingkey=zero").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("parsing the prompt template: %w", err)
	}
	return t, nil
}

// RenderPrompt renders a system prompt; a missing date is today in UTC.
func RenderPrompt(t *template.Template, d PromptData) (string, error) {
	if d.Date == "" {
		d.Date = time.Now().UTC().Format("2006-01-02")
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return "", fmt.Errorf("rendering the prompt: %w", err)
	}
	return b.String(), nil
}
