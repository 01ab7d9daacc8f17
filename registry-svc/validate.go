package registrysvc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/wire"
)

// validator checks a tool's arguments against its input schema (registry-svc/design.md "Calling").
type validator struct {
	schema *jsonschema.Schema
	// accepted are the property names, sorted; closed is true unless the
	// schema itself allows additional properties.
	accepted []string
	known    map[string]bool
	required map[string]bool
	closed   bool
}

// newValidator compiles a tool's input schema.
func newValidator(name string, raw json.RawMessage) (*validator, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("decoding the input schema of %s: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "mem:///tools/" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("adding the input schema of %s: %w", name, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("compiling the input schema of %s: %w", name, err)
	}
	v := &validator{schema: sch, known: map[string]bool{}, required: map[string]bool{}, closed: true}
	var shape struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		AdditionalProperties json.RawMessage            `json:"additionalProperties"`
		Required             []string                   `json:"required"`
	}
	_ = json.Unmarshal(raw, &shape)
	for _, r := range shape.Required {
		v.required[r] = true
	}
	for p := range shape.Properties {
		v.accepted = append(v.accepted, p)
		v.known[p] = true
	}
	sort.Strings(v.accepted)
	if a := bytes.TrimSpace(shape.AdditionalProperties); len(a) > 0 && !bytes.Equal(a, []byte("false")) {
		v.closed = false
	}
	return v, nil
}

// check validates args (nil or a JSON object) and returns them as a JSON
// object. Every failure is invalid_argument with a message a model can act on.
func (v *validator) check(tool string, args json.RawMessage) (json.RawMessage, error) {
	args, err := registry.Arguments(tool, args)
	if err != nil {
		return nil, err
	}
	// One decode serves the checks below and the schema: Arguments made
	// sure args is one JSON object.
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return nil, wire.Errorf(wire.InvalidArgument, "arguments of %s are not valid JSON: %v", tool, err)
	}
	obj, ok := inst.(map[string]any)
	if !ok {
		return nil, wire.Errorf(wire.InvalidArgument, "arguments of %s must be a JSON object", tool)
	}
	if _, ok := obj["user_info"]; ok {
		return nil, wire.Errorf(wire.InvalidArgument, "argument user_info of %s is supplied by the server and cannot be passed; accepted arguments: %s", tool, v.acceptedList()).
			WithDetails(map[string]any{"accepted": v.acceptedSlice()})
	}
	if v.closed {
		var unknown []string
		for k := range obj {
			if !v.known[k] {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			return nil, wire.Errorf(wire.InvalidArgument, "unknown argument(s) %s for %s; accepted arguments: %s", strings.Join(unknown, ", "), tool, v.acceptedList()).
				WithDetails(map[string]any{"unknown": unknown, "accepted": v.acceptedSlice()})
		}
	}
	// Models often send null for an optional argument they mean to omit;
	// treat it as omitted, so the tool's default applies.
	var nulls []string
	for k, val := range obj {
		if val == nil && !v.required[k] {
			nulls = append(nulls, k)
			delete(obj, k)
		}
	}
	if len(nulls) > 0 {
		if args, err = without(args, nulls); err != nil {
			return nil, fmt.Errorf("decoding the arguments of %s: %w", tool, err)
		}
	}
	if err := v.schema.Validate(inst); err != nil {
		var verr *jsonschema.ValidationError
		if !errors.As(err, &verr) {
			return nil, wire.Errorf(wire.InvalidArgument, "arguments of %s are invalid: %v", tool, err)
		}
		return nil, wire.Errorf(wire.InvalidArgument, "invalid arguments for %s: %s", tool, describeErrors(verr))
	}
	return args, nil
}

// without returns the JSON object args without the members keys; the
// other members keep their bytes.
func without(args json.RawMessage, keys []string) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil {
		return nil, err
	}
	for _, k := range keys {
		delete(obj, k)
	}
	return json.Marshal(obj)
}

func (v *validator) acceptedList() string {
	if len(v.accepted) == 0 {
		return "(none)"
	}
	return strings.Join(v.accepted, ", ")
}

func (v *validator) acceptedSlice() []string {
	if v.accepted == nil {
		return []string{}
	}
	return v.accepted
}

// describeErrors flattens a validation error into "at /x: reason" parts.
func describeErrors(verr *jsonschema.ValidationError) string {
	var parts []string
	for _, u := range verr.BasicOutput().Errors {
		if u.Error == nil {
			continue
		}
		msg := u.Error.String()
		if strings.HasPrefix(msg, "validation failed") {
			continue
		}
		loc := u.InstanceLocation
		if loc == "" {
			loc = "arguments"
		} else {
			loc = "argument " + strings.TrimPrefix(loc, "/")
		}
		parts = append(parts, loc+": "+msg)
	}
	if len(parts) == 0 {
		return verr.Error()
	}
	return strings.Join(parts, "; ")
}
