package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/wire"
)

// maxCompletions is the most values one completion returns (the MCP
// limit).
const maxCompletions = 100

// completionResult is completion/complete's result.
type completionResult struct {
	Completion completionValues `json:"completion"`
	ResultType string           `json:"resultType,omitempty"`
}

// completionValues are the suggested values; Total counts them all when
// HasMore says more exist than are returned.
type completionValues struct {
	Values  []string `json:"values"`
	Total   int      `json:"total,omitempty"`
	HasMore bool     `json:"hasMore,omitempty"`
}

// complete suggests values for a prompt argument or a resource template
// variable (design.md "Completion"): the caller's own file paths for the
// memories template's path; skill prompts' task is free text, so it gets
// none; the tool folders' prompts and templates complete as their modules
// say. An unknown prompt, template or argument is -32602.
func (m *Server) complete(ctx context.Context, q *request, msg *rpcMessage) (any, *rpcError) {
	var p struct {
		Ref struct {
			Type string `json:"type"`
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"ref"`
		Argument struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"argument"`
		Context struct {
			Arguments map[string]string `json:"arguments"`
		} `json:"context"`
	}
	if err := json.Unmarshal(msg.Params, &p); err != nil || p.Argument.Name == "" {
		return nil, newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "invalid params: completion/complete needs a ref and an argument")
	}
	var (
		values []string
		e      *rpcError
	)
	switch {
	case p.Ref.Type == "ref/prompt":
		var skill bool
		if skill, e = m.checkPrompt(ctx, p.Ref.Name, p.Argument.Name); e == nil && !skill {
			values, e = m.completeFolders(ctx, &registry.CompleteRequest{Prompt: p.Ref.Name, Argument: p.Argument.Name,
				Value: p.Argument.Value, Context: p.Context.Arguments})
		}
	case p.Ref.Type == "ref/resource" && p.Ref.URI == memoriesTemplate && p.Argument.Name == "path":
		values, e = m.completePath(ctx, q, p.Argument.Value)
	case p.Ref.Type == "ref/resource" && p.Ref.URI != "":
		values, e = m.completeFolders(ctx, &registry.CompleteRequest{Template: p.Ref.URI, Argument: p.Argument.Name,
			Value: p.Argument.Value, Context: p.Context.Arguments})
	default:
		e = newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "invalid params: nothing to complete for %s %s%s argument %q", p.Ref.Type, p.Ref.Name, p.Ref.URI, p.Argument.Name)
	}
	if e != nil {
		return nil, e
	}
	out := completionResult{Completion: completionValues{Values: []string{}}}
	if len(values) > maxCompletions {
		out.Completion.Total, out.Completion.HasMore = len(values), true
		values = values[:maxCompletions]
	}
	out.Completion.Values = append(out.Completion.Values, values...)
	if q.modern {
		out.ResultType = "complete"
	}
	return out, nil
}

// checkPrompt says whether name is a skill prompt, and refuses an argument
// other than its task. Any other name may be a tool folder's prompt.
func (m *Server) checkPrompt(ctx context.Context, name, arg string) (bool, *rpcError) {
	resp, err := m.registry.ListSkills(ctx, &registry.SkillListRequest{})
	if err != nil {
		return false, m.registryError(ctx, err)
	}
	for _, s := range resp.Skills {
		if s.Name != name {
			continue
		}
		if arg != taskArgument.Name {
			return true, newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "invalid params: prompt %s has no argument %q", name, arg)
		}
		return true, nil
	}
	return false, nil
}

// completeFolders asks registry-svc for a tool folder's prompt argument or
// template variable; an unknown one is -32602.
func (m *Server) completeFolders(ctx context.Context, req *registry.CompleteRequest) ([]string, *rpcError) {
	resp, err := m.registry.Complete(ctx, req)
	if wire.IsCode(err, wire.NotFound) {
		return nil, newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "invalid params: nothing to complete for %s%s", req.Prompt, req.Template)
	}
	if err != nil {
		return nil, m.registryError(ctx, err)
	}
	return resp.Values, nil
}

// completePath lists the caller's files under /memories whose path starts
// with prefix; an anonymous caller has none.
func (m *Server) completePath(ctx context.Context, q *request, prefix string) ([]string, *rpcError) {
	if q.principal == nil {
		return nil, nil
	}
	resp, err := m.files.Glob(ctx, &files.GlobRequest{Scope: files.Scope{AccountID: q.principal.AccountID}, Pattern: files.MemoriesRoot + "**"})
	if err != nil {
		return nil, m.registryError(ctx, err)
	}
	var out []string
	for _, f := range resp.Files {
		rel := strings.TrimPrefix(f.Path, files.MemoriesRoot)
		if !f.IsDir && strings.HasPrefix(rel, prefix) {
			out = append(out, rel)
		}
	}
	return out, nil
}
