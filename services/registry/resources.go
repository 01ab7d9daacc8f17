package registry

import (
	"context"
	"encoding/json"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Resource and prompt endpoints: what tool folders ship for MCP clients
// (registry-svc/design.md "Resources and prompts from tool folders"): the
// static files of MCP_RESOURCE_DIRS, and the RESOURCES and PROMPTS of the
// Python tool modules. They are the same for every caller, so the requests
// carry no identity.
var (
	ResourcesList = wire.Endpoint[ResourceListRequest, ResourceListResponse]{Subject: "registry.resources.list", Idempotent: true}
	ResourcesRead = wire.Endpoint[ResourceReadRequest, ResourceReadResponse]{Subject: "registry.resources.read", Idempotent: true}
	PromptsList   = wire.Endpoint[PromptListRequest, PromptListResponse]{Subject: "registry.prompts.list", Idempotent: true}
	PromptsGet    = wire.Endpoint[PromptGetRequest, PromptGetResponse]{Subject: "registry.prompts.get", Idempotent: true}
	Complete      = wire.Endpoint[CompleteRequest, CompleteResponse]{Subject: "registry.completion.complete", Idempotent: true}
	// ResourcesChanged is published when the registry's resources or
	// prompts change: a skill, a resource folder file, or a tool module's
	// RESOURCES or PROMPTS after a reload.
	ResourcesChanged = wire.Event[ResourcesChangedEvent]{Subject: "events.registry.resources"}
)

// ResourceListRequest lists the resources and templates of the tool folders.
type ResourceListRequest struct{}

// ResourceListResponse is the direct resources and the templates, each
// sorted by URI.
type ResourceListResponse struct {
	Resources []Resource         `json:"resources"`
	Templates []ResourceTemplate `json:"templates"`
}

// Resource is one direct resource, as MCP's resources/list shows it.
type Resource struct {
	URI         string          `json:"uri"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MimeType    string          `json:"mimeType,omitempty"`
	Size        int64           `json:"size,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// ResourceTemplate is a parameterised resource (RFC 6570 `{var}` and
// `{+var}`), as MCP's resources/templates/list shows it.
type ResourceTemplate struct {
	URITemplate string          `json:"uriTemplate"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MimeType    string          `json:"mimeType,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// ResourceReadRequest reads one resource or one URI a template matches.
type ResourceReadRequest struct {
	URI string `json:"uri"`
}

// ResourceReadResponse is the resource's contents: not_found when no
// resource or template has the URI.
type ResourceReadResponse struct {
	Contents []ResourceContents `json:"contents"`
}

// ResourceContents is MCP's text or blob resource contents; Text is set
// (possibly empty) exactly when Blob is nil.
type ResourceContents struct {
	URI      string          `json:"uri"`
	MimeType string          `json:"mimeType,omitempty"`
	Text     *string         `json:"text,omitempty"`
	Blob     []byte          `json:"blob,omitempty"`
	Meta     json.RawMessage `json:"_meta,omitempty"`
}

// PromptListRequest lists the prompts of the tool folders.
type PromptListRequest struct{}

// PromptListResponse is the prompts, sorted by name.
type PromptListResponse struct {
	Prompts []Prompt `json:"prompts"`
}

// Prompt is one prompt template, as MCP's prompts/list shows it.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// PromptGetRequest renders a prompt with its arguments.
type PromptGetRequest struct {
	Name      string            `json:"name"`
	Arguments map[string]string `json:"arguments,omitempty"`
	// ClientCapabilities, InputResponses and Replay are CallRequest's: a
	// prompt function may ask its caller (mirobody.elicit) like a tool.
	ClientCapabilities []string                   `json:"client_capabilities,omitempty"`
	InputResponses     map[string]json.RawMessage `json:"input_responses,omitempty"`
	Replay             []string                   `json:"replay,omitempty"`
}

// PromptGetResponse is the rendered prompt: MCP PromptMessages (role and one
// text, image, audio or resource content block each). Errors: not_found for
// an unknown prompt, invalid_argument for a missing or unknown argument.
type PromptGetResponse struct {
	Description string            `json:"description,omitempty"`
	Messages    []json.RawMessage `json:"messages"`
	// InputRequests and MissingCapability are CallResponse's: the prompt
	// function asked its caller, or needed a capability it lacks.
	InputRequests     map[string]json.RawMessage `json:"inputRequests,omitempty"`
	MissingCapability string                     `json:"missingCapability,omitempty"`
}

// CompleteRequest asks for the values of a prompt's argument (Prompt set)
// or of a resource template's variable (Template set) that start with Value.
type CompleteRequest struct {
	Prompt   string `json:"prompt,omitempty"`
	Template string `json:"template,omitempty"`
	Argument string `json:"argument"`
	Value    string `json:"value"`
	// Context holds the arguments already chosen.
	Context map[string]string `json:"context,omitempty"`
}

// CompleteResponse is the suggested values: not_found for an unknown
// prompt or template, invalid_argument for an unknown argument.
type CompleteResponse struct {
	Values []string `json:"values"`
}

// ResourcesChangedEvent says what changed: the resource or prompt lists,
// and the URIs whose contents may differ now.
type ResourcesChangedEvent struct {
	ResourcesListChanged bool     `json:"resources_list_changed,omitempty"`
	PromptsListChanged   bool     `json:"prompts_list_changed,omitempty"`
	Updated              []string `json:"updated,omitempty"`
}

// ListResources returns the tool folders' resources and templates.
func (c *Client) ListResources(ctx context.Context, req *ResourceListRequest) (*ResourceListResponse, error) {
	return ResourcesList.Call(ctx, c.c, req)
}

// ReadResource reads one resource of the tool folders.
func (c *Client) ReadResource(ctx context.Context, req *ResourceReadRequest) (*ResourceReadResponse, error) {
	return ResourcesRead.Call(ctx, c.c, req)
}

// ListPrompts returns the tool folders' prompts.
func (c *Client) ListPrompts(ctx context.Context, req *PromptListRequest) (*PromptListResponse, error) {
	return PromptsList.Call(ctx, c.c, req)
}

// GetPrompt renders one prompt of the tool folders.
func (c *Client) GetPrompt(ctx context.Context, req *PromptGetRequest) (*PromptGetResponse, error) {
	return PromptsGet.Call(ctx, c.c, req)
}

// Complete suggests values for a prompt argument or template variable.
func (c *Client) Complete(ctx context.Context, req *CompleteRequest) (*CompleteResponse, error) {
	return Complete.Call(ctx, c.c, req)
}
