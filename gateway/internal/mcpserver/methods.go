package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Cache hints of the modern era (SEP-2575): tool lists may be reused for a
// short while and are private when filtered for an account.
const (
	listTTLMs     = 30_000
	discoverTTLMs = 300_000
)

// capabilities is what /mcp advertises: tools, resources (skills, the
// caller's files, the tool folders') and prompts (skills, the tool
// folders'), each with list_changed, resource subscriptions, completions,
// and logging; every other feature answers -32601 (gateway/design.md
// "Capabilities").
func capabilities() *mcp.ServerCapabilities {
	return &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true},
		Resources: &mcp.ResourceCapabilities{Subscribe: true, ListChanged: true}, Prompts: &mcp.PromptCapabilities{ListChanged: true},
		Completions: &mcp.CompletionCapabilities{}, Logging: &mcp.LoggingCapabilities{}}
}

// serverInfo names the gateway to clients.
func (m *Server) serverInfo() *mcp.Implementation {
	return &mcp.Implementation{Name: "mirobody", Title: "Mirobody", Version: m.Version}
}

// dispatch runs one request other than tools/call and subscriptions/listen.
func (m *Server) dispatch(w http.ResponseWriter, q *request, msg *rpcMessage) (any, *rpcError) {
	ctx := q.r.Context()
	switch {
	case msg.Method == "initialize" && !q.modern:
		return m.initialize(w, q, msg)
	case msg.Method == "ping" && !q.modern:
		return struct{}{}, nil
	case msg.Method == "server/discover":
		return m.discover(q), nil
	case msg.Method == "tools/list":
		return m.listTools(ctx, q, msg)
	case msg.Method == "resources/list":
		return m.listResources(ctx, q, msg)
	case msg.Method == "resources/templates/list":
		return m.listTemplates(ctx, q, msg)
	case msg.Method == "resources/read":
		return m.readResource(ctx, q, msg)
	case msg.Method == "resources/subscribe" && !q.modern:
		return m.subscribe(ctx, q, msg, true)
	case msg.Method == "resources/unsubscribe" && !q.modern:
		return m.subscribe(ctx, q, msg, false)
	case msg.Method == "prompts/list":
		return m.listPrompts(ctx, q, msg)
	case msg.Method == "prompts/get":
		return m.getPrompt(ctx, q, msg)
	case msg.Method == "completion/complete":
		return m.complete(ctx, q, msg)
	case msg.Method == "logging/setLevel" && !q.modern:
		return m.setLevel(q, msg)
	case q.modern && (msg.Method == "tasks/get" || msg.Method == "tasks/update" || msg.Method == "tasks/cancel"):
		return m.taskMethod(ctx, q, msg)
	}
	status := http.StatusOK
	if q.modern {
		status = http.StatusNotFound
	}
	return nil, newRPCError(status, jsonrpc.CodeMethodNotFound, "method not found: %s", msg.Method)
}

// initialize negotiates the legacy protocol version and seals a session.
func (m *Server) initialize(w http.ResponseWriter, q *request, msg *rpcMessage) (any, *rpcError) {
	var p mcp.InitializeParams
	if len(msg.Params) > 0 {
		if err := json.Unmarshal(msg.Params, &p); err != nil {
			return nil, newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "invalid params: %v", err)
		}
	}
	v := p.ProtocolVersion
	if !slices.Contains(legacyVersions, v) {
		v = latestLegacy
	}
	account := ""
	if q.principal != nil {
		account = q.principal.AccountID
	}
	if w != nil {
		// Read from the raw params: the SDK's type marshals an empty roots.
		var raw struct {
			Capabilities json.RawMessage `json:"capabilities"`
		}
		_ = json.Unmarshal(msg.Params, &raw)
		caps := capabilityNames(raw.Capabilities)
		w.Header().Set(headerSessionID, m.sealer.seal(session{Version: v, Account: account, Caps: caps}))
	}
	return &mcp.InitializeResult{ProtocolVersion: v, Capabilities: capabilities(), ServerInfo: m.serverInfo(),
		Instructions: "Mirobody tools. tools/list shows the tools this caller may use; sign in (Bearer API key) to see personal tools. " +
			"Skills are resources (skill://<skill>/<path>) and prompts; signed-in callers read their own files through the template vfs:///memories/{+path}."}, nil
}

// discoverResult is the SDK's DiscoverResult; resultType is set explicitly
// because modern results always carry it.
func (m *Server) discover(q *request) any {
	r := &mcp.DiscoverResult{
		Meta:              mcp.Meta{mcp.MetaKeyServerInfo: m.serverInfo()},
		Cacheable:         mcp.Cacheable{TTLMs: discoverTTLMs, CacheScope: "public"},
		SupportedVersions: supportedVersions,
		Capabilities:      capabilities(),
	}
	// Tasks are served in the modern era only (design.md "Tasks").
	r.Capabilities.AddExtension(tasksExtension, nil)
	r.ResultType = "complete"
	return r
}

// wireTool is a tool as MCP clients see it: registry.Tool without the
// registry's own facts.
type wireTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	Execution    json.RawMessage `json:"execution,omitempty"`
	Meta         json.RawMessage `json:"_meta,omitempty"`
}

// listResult is tools/list's result; the cache fields and resultType are
// only sent in the modern era.
type listResult struct {
	Tools      []wireTool `json:"tools"`
	ResultType string     `json:"resultType,omitempty"`
	TTLMs      *int       `json:"ttlMs,omitempty"`
	CacheScope string     `json:"cacheScope,omitempty"`
}

// listTools returns the tools visible to the caller (gateway/design.md "Auth on
// /mcp", registry-svc/design.md "Tool visibility").
func (m *Server) listTools(ctx context.Context, q *request, msg *rpcMessage) (*listResult, *rpcError) {
	resp, e := m.listRegistry(ctx, q, msg)
	if e != nil {
		return nil, e
	}
	return listResultOf(q, resp), nil
}

// listRegistry checks a tools/list request and asks the registry for the
// caller's tools, unless its stable answer still holds (listtrust.go). The
// answer is the registry client's shared copy: read-only.
func (m *Server) listRegistry(ctx context.Context, q *request, msg *rpcMessage) (*registry.ListResponse, *rpcError) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	if len(msg.Params) > 0 {
		if err := json.Unmarshal(msg.Params, &p); err != nil {
			return nil, newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "invalid params: %v", err)
		}
	}
	if p.Cursor != "" {
		return nil, newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "invalid params: unknown cursor")
	}
	c := q.caller()
	epoch := m.hub.listEpoch()
	if resp := m.trusted.get(c, epoch); resp != nil {
		return resp, nil
	}
	resp, err := m.registry.List(ctx, &registry.ListRequest{Caller: c})
	if err != nil {
		return nil, m.registryError(ctx, err)
	}
	m.trusted.put(c, epoch, resp)
	return resp, nil
}

// listResultOf renders the registry's answer as tools/list's result.
func listResultOf(q *request, resp *registry.ListResponse) *listResult {
	out := listResult{Tools: make([]wireTool, 0, len(resp.Tools))}
	for _, t := range resp.Tools {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		wt := wireTool{Name: t.Name, Title: t.Title, Description: t.Description,
			InputSchema: schema, OutputSchema: t.OutputSchema, Annotations: t.Annotations, Meta: t.Meta}
		if q.modern {
			wt.Execution = t.Execution // task support: served in the modern era only
		}
		out.Tools = append(out.Tools, wt)
	}
	if q.modern {
		ttl := listTTLMs
		out.ResultType, out.TTLMs, out.CacheScope = "complete", &ttl, "public"
		if q.principal != nil {
			out.CacheScope = "private"
		}
	}
	return &out
}

// registryError maps a registry failure through the one code table
// (Options.Codes). Unauthenticated becomes the 401 challenge of gateway/design.md "Auth on /mcp".
func (m *Server) registryError(ctx context.Context, err error) *rpcError {
	code, rpc := m.Codes(err)
	msg := "internal error"
	var werr *wire.Error
	if errors.As(err, &werr) && code != wire.Internal {
		msg = werr.Message
	} else if code == wire.Internal {
		m.Log.ErrorContext(ctx, "registry call failed", "err", err)
	}
	switch code {
	case wire.Unauthenticated:
		return m.unauthorized(msg)
	case wire.PermissionDenied:
		return newRPCError(http.StatusForbidden, int64(rpc), "%s", msg)
	}
	e := newRPCError(http.StatusOK, int64(rpc), "%s", msg)
	if wire.IsTooLarge(err) {
		e = e.withData(werr.Details)
	}
	return e
}

// notify handles a client notification; none of them gets a reply.
func (m *Server) notify(q *request, msg *rpcMessage) {
	if msg.Method != "notifications/cancelled" {
		return
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason"`
	}
	if json.Unmarshal(msg.Params, &p) != nil || len(p.RequestID) == 0 {
		return
	}
	m.cancel(q.r.Context(), q, callID(q, p.RequestID), p.Reason)
}
