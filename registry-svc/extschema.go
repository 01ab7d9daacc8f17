package registrysvc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// checkObjectSchema checks that raw is a JSON Schema of a JSON object: a
// JSON object with "type": "object" that compiles as a schema (2020-12
// unless its $schema says otherwise). No reference is loaded: a server's
// schema must not make registry-svc read a file or a URL.
func checkObjectSchema(raw json.RawMessage) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return errors.New("is not a JSON object")
	}
	if t := bytes.TrimSpace(top["type"]); !bytes.Equal(t, []byte(`"object"`)) {
		return fmt.Errorf(`has type %.40s, not "object"`, typeOrNone(t))
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("is not valid JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	const url = "mem:///external/schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return fmt.Errorf("is not a valid JSON Schema: %w", err)
	}
	if _, err := c.Compile(url); err != nil {
		// One line for the server's health, however deep the failure.
		return fmt.Errorf("is not a valid JSON Schema: %.300s", strings.Join(strings.Fields(err.Error()), " "))
	}
	return nil
}

func typeOrNone(b []byte) string {
	if len(b) == 0 {
		return "(none)"
	}
	return string(b)
}

// noLoader refuses every reference outside the schema itself.
type noLoader struct{}

// Load implements jsonschema.URLLoader.
func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external references are not loaded (%.100s)", url)
}
