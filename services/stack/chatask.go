package stack

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/mirobody/mirobody-go/services/agent"
)

// askProperty is the part of a flat JSON Schema property that the
// terminal asks by.
type askProperty struct {
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Enum        []any  `json:"enum"`
	Default     any    `json:"default"`
}

// askUser shows a tool's question (an ask event) and reads the answer,
// the body of POST /api/runs/{id}/answer: accept with each field of the
// question's flat schema read on its own line (empty takes the default,
// or leaves an optional field out), decline or cancel.
func askUser(in *bufio.Reader, w io.Writer, ev agent.Event) ([]byte, error) {
	var schema struct {
		Properties map[string]askProperty `json:"properties"`
		Required   []string               `json:"required"`
	}
	_ = json.Unmarshal(ev.Schema, &schema) // a question without fields is still one
	fmt.Fprintf(w, "? %s asks: %s\n", ev.Name, ev.Message)
	read := func(prompt string) (string, error) {
		fmt.Fprint(w, prompt)
		line, err := in.ReadString('\n')
		if err != nil && line == "" {
			return "", fmt.Errorf("reading the answer: %w", err)
		}
		return strings.TrimSpace(line), nil
	}
	for {
		choice, err := read("  [a]nswer, [d]ecline, [c]ancel? ")
		if err != nil {
			return nil, err
		}
		switch strings.ToLower(choice) {
		case "d", "decline", "n", "no":
			return json.Marshal(map[string]string{"tool_call_id": ev.ID, "action": "decline"})
		case "c", "cancel":
			return json.Marshal(map[string]string{"tool_call_id": ev.ID, "action": "cancel"})
		case "a", "answer", "y", "yes":
		default:
			continue
		}
		content := map[string]any{}
		for _, name := range slices.Sorted(maps.Keys(schema.Properties)) {
			p := schema.Properties[name]
			required := slices.Contains(schema.Required, name)
			for {
				line, err := read("  " + fieldPrompt(name, p, required))
				if err != nil {
					return nil, err
				}
				v, ok, msg := parseField(line, p, required)
				if msg != "" {
					fmt.Fprintln(w, "  "+msg)
					continue
				}
				if ok {
					content[name] = v
				}
				break
			}
		}
		return json.Marshal(map[string]any{"tool_call_id": ev.ID, "action": "accept", "content": content})
	}
}

// fieldPrompt names a field with its kind, whether it is required and
// its default.
func fieldPrompt(name string, p askProperty, required bool) string {
	kind := p.Type
	if len(p.Enum) > 0 {
		var opts []string
		for _, e := range p.Enum {
			opts = append(opts, fmt.Sprint(e))
		}
		kind = strings.Join(opts, "|")
	}
	s := cmp.Or(p.Title, name) + " (" + kind
	if required {
		s += ", required"
	}
	if p.Default != nil {
		s += fmt.Sprintf(", default %v", p.Default)
	}
	return s + "): "
}

// parseField turns a typed line into the field's value; ok is false for
// an optional field left out, msg says what is wrong with the line.
func parseField(line string, p askProperty, required bool) (v any, ok bool, msg string) {
	if line == "" {
		switch {
		case p.Default != nil:
			return p.Default, true, ""
		case required:
			return nil, false, "this field is required"
		}
		return nil, false, ""
	}
	if len(p.Enum) > 0 {
		for _, e := range p.Enum {
			if fmt.Sprint(e) == line {
				return e, true, ""
			}
		}
		return nil, false, "choose one of the listed values"
	}
	switch p.Type {
	case "boolean":
		switch strings.ToLower(line) {
		case "y", "yes", "true":
			return true, true, ""
		case "n", "no", "false":
			return false, true, ""
		}
		return nil, false, "answer yes or no"
	case "integer":
		n, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			return nil, false, "that is not a whole number"
		}
		return n, true, ""
	case "number":
		f, err := strconv.ParseFloat(line, 64)
		if err != nil {
			return nil, false, "that is not a number"
		}
		return f, true, ""
	}
	return line, true, ""
}
