package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mirobody/mirobody-go/services/registry"
)

// paramIndexTTL bounds how long the x-mcp-header bindings of the tool set
// are reused before registry-svc is asked again.
const paramIndexTTL = 10 * time.Second

// paramBinding ties a (possibly nested) argument to the Mcp-Param-<Header>
// HTTP header that must mirror it in the modern era (SEP-2243).
type paramBinding struct {
	Path   []string
	Header string
}

// paramIndex caches, per tool name, the bindings declared by x-mcp-header
// in input schemas. Schemas are the same for every caller, so one anonymous
// listing serves all.
type paramIndex struct {
	mu      sync.Mutex
	byTool  map[string][]paramBinding
	fetched time.Time
	now     func() time.Time
}

// bindings returns the bindings of tool, refreshing the index when stale.
func (p *paramIndex) bindings(ctx context.Context, reg *registry.Client, tool string) ([]paramBinding, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byTool == nil || p.now().Sub(p.fetched) > paramIndexTTL {
		resp, err := reg.List(ctx, &registry.ListRequest{})
		if err != nil {
			return nil, err
		}
		p.byTool = map[string][]paramBinding{}
		for _, t := range resp.Tools {
			if b := schemaBindings(t.InputSchema, nil); len(b) > 0 {
				p.byTool[t.Name] = b
			}
		}
		p.fetched = p.now()
	}
	return p.byTool[tool], nil
}

// headerSchema is the part of a JSON schema that x-mcp-header lives in.
type headerSchema struct {
	XMCPHeader json.RawMessage         `json:"x-mcp-header"`
	Properties map[string]headerSchema `json:"properties"`
}

// schemaBindings collects the x-mcp-header annotations of schema's
// properties at any depth.
func schemaBindings(schema json.RawMessage, prefix []string) []paramBinding {
	var s headerSchema
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	return collectBindings(s.Properties, prefix)
}

func collectBindings(props map[string]headerSchema, prefix []string) []paramBinding {
	var out []paramBinding
	for name, p := range props {
		path := append(append([]string(nil), prefix...), name)
		var header string
		if json.Unmarshal(p.XMCPHeader, &header) == nil && header != "" {
			out = append(out, paramBinding{Path: path, Header: header})
		}
		out = append(out, collectBindings(p.Properties, path)...)
	}
	return out
}

// checkParamHeaders verifies that every bound argument present in the body
// is mirrored, equal, in its Mcp-Param header, and that no header stands
// for an absent argument.
func checkParamHeaders(h http.Header, args json.RawMessage, bindings []paramBinding) error {
	if len(bindings) == 0 {
		// Most tools bind nothing: decoding the arguments would be wasted.
		return nil
	}
	var obj map[string]json.RawMessage
	_ = json.Unmarshal(args, &obj)
	for _, b := range bindings {
		name := "Mcp-Param-" + b.Header
		hv, hasHeader := h.Get(name), len(h.Values(name)) > 0
		raw, ok := lookupArg(obj, b.Path)
		if !ok || string(raw) == "null" {
			if hasHeader {
				return fmt.Errorf("%s is set but argument %s is absent", name, strings.Join(b.Path, "."))
			}
			continue
		}
		if !hasHeader {
			return fmt.Errorf("%s is missing for argument %s", name, strings.Join(b.Path, "."))
		}
		decoded, err := decodeParamHeader(hv)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if !sameValue(decoded, raw) {
			return fmt.Errorf("%s does not match argument %s", name, strings.Join(b.Path, "."))
		}
	}
	return nil
}

// lookupArg walks path through nested argument objects.
func lookupArg(obj map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	var cur json.RawMessage
	for i, part := range path {
		if i > 0 {
			obj = nil
			if json.Unmarshal(cur, &obj) != nil {
				return nil, false
			}
		}
		v, ok := obj[part]
		if !ok {
			return nil, false
		}
		cur = v
	}
	return cur, cur != nil
}

// decodeParamHeader undoes the =?base64?…?= wrapping of SEP-2243; a value
// without both the prefix and the suffix is literal.
func decodeParamHeader(v string) (string, error) {
	inner, ok := strings.CutPrefix(v, "=?base64?")
	if !ok {
		return v, nil
	}
	inner, ok = strings.CutSuffix(inner, "?=")
	if !ok {
		return v, nil
	}
	b, err := base64.StdEncoding.DecodeString(inner)
	if err != nil {
		return "", fmt.Errorf("invalid base64 value")
	}
	return string(b), nil
}

// sameValue compares a header value with a primitive JSON argument:
// strings exactly, booleans as true/false, integers numerically.
func sameValue(header string, raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch v := v.(type) {
	case string:
		return header == v
	case bool:
		return header == strconv.FormatBool(v)
	case float64:
		f, err := strconv.ParseFloat(strings.TrimSpace(header), 64)
		return err == nil && !math.IsNaN(f) && f == v
	}
	return false
}
