package registrysvc

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mirobody/mirobody-go/registry-svc/internal/builtin"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/wire"
)

// textResult is a CallResponse with one text block.
func textResult(text string, isError bool) *registry.CallResponse {
	block, _ := json.Marshal(map[string]string{"type": "text", "text": text})
	return &registry.CallResponse{Content: []json.RawMessage{block}, IsError: isError}
}

// builtinResult maps a built-in's return values exactly as the Python host
// maps a Python tool's (registry-svc/design.md "Calling"); see package builtin.
func builtinResult(tool string, v any, err error) (*registry.CallResponse, error) {
	if err != nil {
		var werr *wire.Error
		var terr *builtin.ToolError
		switch {
		case errors.As(err, &werr):
			return nil, werr
		case errors.As(err, &terr):
			return textResult(terr.Message, true), nil
		default:
			return textResult(fmt.Sprintf("%s failed: %v", tool, err), true), err
		}
	}
	switch r := v.(type) {
	case nil:
		return &registry.CallResponse{Content: []json.RawMessage{}}, nil
	case *registry.CallResponse:
		return r, nil
	case string:
		return textResult(r, false), nil
	}
	body, err := json.Marshal(v)
	if err != nil {
		return textResult(fmt.Sprintf("%s failed: encoding its result: %v", tool, err), true), err
	}
	resp := textResult(string(body), false)
	switch {
	case len(body) > 0 && body[0] == '{':
		resp.StructuredContent = body
	case len(body) > 0 && body[0] == '[':
		resp.StructuredContent = json.RawMessage(`{"result":` + string(body) + `}`)
	}
	return resp, nil
}
