package pyhost

import (
	"context"
	_ "embed"
	"encoding/json"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/wire"
)

// extrasSource defines the modules' RESOURCES and PROMPTS (registry-svc/
// design.md "Resources and prompts from tool folders"); it runs in front of
// host.py, in the same namespace.
//
//go:embed extras.py
var extrasSource string

// ResourceInfo is one entry of a module's RESOURCES: a direct resource
// (URI set) or a template (URITemplate set).
type ResourceInfo struct {
	registry.Resource
	URITemplate string `json:"uriTemplate,omitempty"`
}

// extraReply is the host's answer to read, prompt and complete, and the
// RESOURCES and PROMPTS a discovery found.
type extraReply struct {
	Resources   []ResourceInfo              `json:"resources,omitempty"`
	Prompts     []registry.Prompt           `json:"prompts,omitempty"`
	Contents    []registry.ResourceContents `json:"contents,omitempty"`
	Description string                      `json:"description,omitempty"`
	Messages    []json.RawMessage           `json:"messages,omitempty"`
	Values      []string                    `json:"values,omitempty"`
	// InputRequests and MissingCapability: a prompt function asked its
	// caller, or needed a capability the caller lacks.
	InputRequests     map[string]json.RawMessage `json:"inputRequests,omitempty"`
	MissingCapability string                     `json:"missingCapability,omitempty"`
	// Raised says the module's function raised (Error and Traceback say
	// what); otherwise an Error is the request's fault (Invalid) or names
	// nothing the modules define.
	Raised bool `json:"raised,omitempty"`
}

// ReadResource reads uri, one of the modules' resources or a URI one of
// their templates matches: not_found when none has it.
func (p *Pool) ReadResource(ctx context.Context, uri string) (*registry.ResourceReadResponse, error) {
	r, err := p.extra(ctx, &message{Op: "read", URI: uri}, "resource "+uri)
	if err != nil {
		return nil, err
	}
	return &registry.ResourceReadResponse{Contents: r.Contents}, nil
}

// GetPrompt renders req's prompt: not_found for an unknown prompt,
// invalid_argument for a missing or unknown argument. A prompt function
// that asks its caller (mirobody.elicit) stops with InputRequests, like a
// tool, and is run again with the answers.
func (p *Pool) GetPrompt(ctx context.Context, req *registry.PromptGetRequest) (*registry.PromptGetResponse, error) {
	r, err := p.extra(ctx, &message{Op: "prompt", Name: req.Name, Arguments: req.Arguments,
		Caps: req.ClientCapabilities, Inputs: req.InputResponses, Replay: req.Replay}, "prompt "+req.Name)
	if err != nil {
		return nil, err
	}
	if r.Messages == nil {
		r.Messages = []json.RawMessage{}
	}
	return &registry.PromptGetResponse{Description: r.Description, Messages: r.Messages,
		InputRequests: r.InputRequests, MissingCapability: r.MissingCapability}, nil
}

// Complete suggests values for req's prompt argument or template variable.
func (p *Pool) Complete(ctx context.Context, req *registry.CompleteRequest) (*registry.CompleteResponse, error) {
	r, err := p.extra(ctx, &message{Op: "complete", Name: req.Prompt, URI: req.Template, Argument: req.Argument,
		Value: req.Value, Arguments: req.Context}, "completion")
	if err != nil {
		return nil, err
	}
	if r.Values == nil {
		r.Values = []string{}
	}
	return &registry.CompleteResponse{Values: r.Values}, nil
}

// extra sends m to the least busy host and maps its errors: a function that
// raised is internal (logged with its traceback), a bad request
// invalid_argument, anything else not_found.
func (p *Pool) extra(ctx context.Context, m *message, what string) (*message, error) {
	w, release, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	r, err := w.request(ctx, m, false, callHooks{})
	switch {
	case err != nil:
		return nil, err
	case r.Raised:
		w.log.Warn("python resource or prompt function raised", "what", what, "traceback", r.Traceback)
		return nil, wire.Errorf(wire.Internal, "%s failed: %s", what, r.Error)
	case r.Invalid:
		return nil, wire.Errorf(wire.InvalidArgument, "%s", r.Error)
	case r.Error != "":
		return nil, wire.Errorf(wire.NotFound, "%s", r.Error)
	}
	return r, nil
}
