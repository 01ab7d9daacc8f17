package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/wire"
)

// taskArgument is every skill prompt's one argument: what to do with the
// skill, appended to its instructions.
var taskArgument = &mcp.PromptArgument{Name: "task", Title: "Task",
	Description: "What to do with the skill; appended to its instructions."}

// promptList is prompts/list's result.
type promptList struct {
	Prompts []*mcp.Prompt `json:"prompts"`
	cacheFields
}

// promptResult is prompts/get's result.
type promptResult struct {
	Description string `json:"description,omitempty"`
	// Messages are PromptMessages: the SDK's type for skills, the Python
	// module's JSON for the tool folders' prompts.
	Messages   []any  `json:"messages"`
	ResultType string `json:"resultType,omitempty"`
}

// listPrompts lists every skill as a prompt, then the tool folders'
// prompts whose names no skill has (design.md "Prompts").
func (m *Server) listPrompts(ctx context.Context, q *request, msg *rpcMessage) (any, *rpcError) {
	if e := noCursor(msg.Params); e != nil {
		return nil, e
	}
	resp, err := m.registry.ListSkills(ctx, &registry.SkillListRequest{})
	if err != nil {
		return nil, m.registryError(ctx, err)
	}
	folders, err := m.registry.ListPrompts(ctx, &registry.PromptListRequest{})
	if err != nil {
		return nil, m.registryError(ctx, err)
	}
	out := promptList{Prompts: []*mcp.Prompt{}, cacheFields: cache(q, false)}
	skills := map[string]bool{}
	for _, s := range resp.Skills {
		skills[s.Name] = true
		desc := s.Description
		if desc == "" {
			desc = "The skill " + s.Name
		}
		out.Prompts = append(out.Prompts, &mcp.Prompt{Name: s.Name, Description: desc, Arguments: []*mcp.PromptArgument{taskArgument}})
	}
	for _, p := range folders.Prompts {
		if skills[p.Name] {
			continue
		}
		args := make([]*mcp.PromptArgument, 0, len(p.Arguments))
		for _, a := range p.Arguments {
			args = append(args, &mcp.PromptArgument{Name: a.Name, Description: a.Description, Required: a.Required})
		}
		out.Prompts = append(out.Prompts, &mcp.Prompt{Name: p.Name, Title: p.Title, Description: p.Description, Arguments: args})
	}
	return out, nil
}

// getPrompt returns a skill's SKILL.md body (without its frontmatter) as
// one user message, the task argument appended, or renders a tool
// folder's prompt.
func (m *Server) getPrompt(ctx context.Context, q *request, msg *rpcMessage) (any, *rpcError) {
	var p struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
	}
	if err := json.Unmarshal(msg.Params, &p); err != nil || p.Name == "" {
		return nil, newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "invalid params: prompts/get needs a prompt name and string arguments")
	}
	resp, err := m.registry.ReadSkill(ctx, &registry.SkillReadRequest{Name: p.Name, Path: "SKILL.md"})
	if wire.IsCode(err, wire.NotFound) {
		return m.getFolderPrompt(ctx, q, msg, p.Name, p.Arguments)
	}
	if err != nil {
		return nil, m.registryError(ctx, err)
	}
	for k := range p.Arguments {
		if k != taskArgument.Name {
			return nil, newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "invalid params: unknown argument %q; accepted: task", k)
		}
	}
	text := skillBody(resp.Text)
	if task := strings.TrimSpace(p.Arguments[taskArgument.Name]); task != "" {
		text += "\n\nTask: " + task
	}
	out := promptResult{Description: "The skill " + p.Name,
		Messages: []any{&mcp.PromptMessage{Role: "user", Content: &mcp.TextContent{Text: text}}}}
	if q.modern {
		out.ResultType = "complete"
	}
	return out, nil
}

// getFolderPrompt renders a tool folder's prompt; its messages come as the
// Python module made them (text, image, audio or embedded resource). A
// prompt function that asks its caller makes the answer an
// InputRequiredResult in the modern era (SEP-2322 on a non-tool request),
// with the state sealed to "prompt:<name>" so a tool's state never opens
// for a prompt; the legacy era offers it nothing to ask (design.md
// "Elicitation and sampling").
func (m *Server) getFolderPrompt(ctx context.Context, q *request, msg *rpcMessage, name string, args map[string]string) (any, *rpcError) {
	req := &registry.PromptGetRequest{Name: name, Arguments: args}
	bound := &callParams{Name: promptStateName(name), InputResponses: msg.call.InputResponses, RequestState: msg.call.RequestState}
	if q.modern {
		inputs, replay, e := m.modernInputs(q, bound)
		if e != nil {
			return nil, e
		}
		req.ClientCapabilities, req.InputResponses, req.Replay = capabilityNames(msg.meta[mcp.MetaKeyClientCapabilities]), inputs, replay
	}
	resp, err := m.registry.GetPrompt(ctx, req)
	switch {
	case wire.IsCode(err, wire.NotFound):
		return nil, newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "unknown prompt: %s", name)
	case err != nil:
		return nil, m.registryError(ctx, err)
	case resp.MissingCapability != "" && q.modern:
		return nil, missingCapability(resp.MissingCapability)
	case resp.MissingCapability != "":
		return nil, newRPCError(http.StatusOK, jsonrpc.CodeInternalError, "prompt %s needs the client's %s, which this protocol version cannot ask for", name, resp.MissingCapability)
	case len(resp.InputRequests) > 0:
		return m.inputRequired(q, bound.Name, req.InputResponses, resp.InputRequests), nil
	}
	out := promptResult{Description: resp.Description, Messages: make([]any, 0, len(resp.Messages))}
	for _, msg := range resp.Messages {
		out.Messages = append(out.Messages, msg)
	}
	if q.modern {
		out.ResultType = "complete"
	}
	return out, nil
}

// promptStateName is what a prompt's requestState is bound to in place of
// a tool name; no tool name has a colon.
func promptStateName(name string) string { return "prompt:" + name }

// skillBody is a SKILL.md without its YAML frontmatter, trimmed.
func skillBody(doc string) string {
	doc = strings.TrimPrefix(doc, "\ufeff")
	if rest, ok := strings.CutPrefix(doc, "---"); ok {
		if _, body, ok := strings.Cut(rest, "\n---"); ok {
			// The closing line may carry trailing text up to its newline.
			_, body, _ = strings.Cut(body, "\n")
			doc = body
		}
	}
	return strings.TrimSpace(doc)
}
