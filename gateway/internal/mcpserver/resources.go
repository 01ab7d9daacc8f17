package mcpserver

import (
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/wire"
)

// URI schemes of /mcp's resources (design.md "Resources").
const (
	// skillScheme names a skill file: skill://<skill>/<path in its folder>.
	skillScheme = "skill://"
	// memoriesPrefix names a file of the caller's own account:
	// vfs:///memories/<path>. The URI never names an account: the caller's
	// is the only one it can reach.
	memoriesPrefix   = "vfs://" + files.MemoriesRoot
	memoriesTemplate = memoriesPrefix + "{+path}"
)

// codeResourceNotFound is resources/read's error for an unknown URI: -32602
// with the URI in data (SEP-2164).
const codeResourceNotFound = jsonrpc.CodeInvalidParams

// resourceList is resources/list's result.
type resourceList struct {
	Resources []*mcp.Resource `json:"resources"`
	cacheFields
}

// templateList is resources/templates/list's result.
type templateList struct {
	ResourceTemplates []*mcp.ResourceTemplate `json:"resourceTemplates"`
	cacheFields
}

// readResult is resources/read's result; a user file's is private.
type readResult struct {
	Contents []*contents `json:"contents"`
	cacheFields
}

// contents is a resource's contents. Unlike the SDK's ResourceContents it
// keeps an empty text: contents carry text or blob.
type contents struct {
	URI      string   `json:"uri"`
	MIMEType string   `json:"mimeType,omitempty"`
	Text     *string  `json:"text,omitempty"`
	Blob     []byte   `json:"blob,omitempty"`
	Meta     mcp.Meta `json:"_meta,omitempty"`
}

// cacheFields are the modern era's result fields of a list (SEP-2549).
type cacheFields struct {
	ResultType string `json:"resultType,omitempty"`
	TTLMs      *int   `json:"ttlMs,omitempty"`
	CacheScope string `json:"cacheScope,omitempty"`
}

// cache returns the modern era's cache fields: public unless the list is
// the caller's own.
func cache(q *request, private bool) cacheFields {
	if !q.modern {
		return cacheFields{}
	}
	ttl := listTTLMs
	c := cacheFields{ResultType: "complete", TTLMs: &ttl, CacheScope: "public"}
	if private {
		c.CacheScope = "private"
	}
	return c
}

// noCursor refuses a cursor: every list here is one page.
func noCursor(params json.RawMessage) *rpcError {
	var p struct {
		Cursor string `json:"cursor"`
	}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "invalid params: %v", err)
		}
	}
	if p.Cursor != "" {
		return newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "invalid params: unknown cursor")
	}
	return nil
}

// listResources lists every skill file and the tool folders' resources.
// User files are not listed (there may be thousands): the template names
// them.
func (m *Server) listResources(ctx context.Context, q *request, msg *rpcMessage) (any, *rpcError) {
	if e := noCursor(msg.Params); e != nil {
		return nil, e
	}
	resp, err := m.registry.ListSkills(ctx, &registry.SkillListRequest{})
	if err != nil {
		return nil, m.registryError(ctx, err)
	}
	folders, err := m.registry.ListResources(ctx, &registry.ResourceListRequest{})
	if err != nil {
		return nil, m.registryError(ctx, err)
	}
	out := resourceList{Resources: []*mcp.Resource{}, cacheFields: cache(q, false)}
	for _, s := range resp.Skills {
		for _, f := range s.Files {
			r := &mcp.Resource{URI: skillScheme + s.Name + "/" + f.Path, Name: s.Name + "/" + f.Path, MIMEType: f.MimeType, Size: f.Size}
			if f.Path == "SKILL.md" {
				r.Title, r.Description = s.Name, s.Description
			}
			out.Resources = append(out.Resources, r)
		}
	}
	for _, r := range folders.Resources {
		out.Resources = append(out.Resources, &mcp.Resource{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description,
			MIMEType: r.MimeType, Size: r.Size, Meta: meta(r.Meta)})
	}
	return out, nil
}

// listTemplates offers the caller's own files (an anonymous caller has
// none) and the tool folders' templates.
func (m *Server) listTemplates(ctx context.Context, q *request, msg *rpcMessage) (any, *rpcError) {
	if e := noCursor(msg.Params); e != nil {
		return nil, e
	}
	folders, err := m.registry.ListResources(ctx, &registry.ResourceListRequest{})
	if err != nil {
		return nil, m.registryError(ctx, err)
	}
	out := templateList{ResourceTemplates: []*mcp.ResourceTemplate{}, cacheFields: cache(q, q.principal != nil)}
	if q.principal != nil {
		out.ResourceTemplates = append(out.ResourceTemplates, &mcp.ResourceTemplate{
			URITemplate: memoriesTemplate, Name: "memories", Title: "Your files",
			Description: "A file of your account's /memories folder, by its path inside it."})
	}
	for _, t := range folders.Templates {
		out.ResourceTemplates = append(out.ResourceTemplates, &mcp.ResourceTemplate{URITemplate: t.URITemplate, Name: t.Name,
			Title: t.Title, Description: t.Description, MIMEType: t.MimeType, Meta: meta(t.Meta)})
	}
	return out, nil
}

// meta decodes a registry _meta object; anything else is dropped.
func meta(raw json.RawMessage) mcp.Meta {
	var out mcp.Meta
	if len(raw) > 0 && json.Unmarshal(raw, &out) != nil {
		return nil
	}
	return out
}

// readResource reads a skill file or one of the caller's files.
func (m *Server) readResource(ctx context.Context, q *request, msg *rpcMessage) (any, *rpcError) {
	var p struct {
		URI string `json:"uri"`
	}
	if err := json.Unmarshal(msg.Params, &p); err != nil || p.URI == "" {
		return nil, newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "invalid params: resources/read needs a uri")
	}
	var (
		c *contents
		e *rpcError
	)
	switch {
	case strings.HasPrefix(p.URI, skillScheme):
		c, e = m.readSkill(ctx, p.URI)
	case strings.HasPrefix(p.URI, memoriesPrefix):
		c, e = m.readMemory(ctx, q, p.URI)
	default:
		return m.readFolders(ctx, q, p.URI)
	}
	if e != nil {
		return nil, e
	}
	return readResult{Contents: []*contents{c}, cacheFields: cache(q, !strings.HasPrefix(p.URI, skillScheme))}, nil
}

// readFolders reads a resource of the tool folders through registry-svc;
// they are the same for every caller, hence public.
func (m *Server) readFolders(ctx context.Context, q *request, uri string) (any, *rpcError) {
	resp, err := m.registry.ReadResource(ctx, &registry.ResourceReadRequest{URI: uri})
	if wire.IsCode(err, wire.NotFound) {
		return nil, notFound(uri)
	}
	if err != nil {
		return nil, m.registryError(ctx, err)
	}
	out := readResult{Contents: make([]*contents, 0, len(resp.Contents)), cacheFields: cache(q, false)}
	for _, c := range resp.Contents {
		out.Contents = append(out.Contents, &contents{URI: c.URI, MIMEType: c.MimeType, Text: c.Text, Blob: c.Blob, Meta: meta(c.Meta)})
	}
	return out, nil
}

// readSkill reads skill://<skill>/<path> through registry-svc.
func (m *Server) readSkill(ctx context.Context, uri string) (*contents, *rpcError) {
	name, rel, ok := strings.Cut(strings.TrimPrefix(uri, skillScheme), "/")
	if !ok || name == "" || rel == "" {
		return nil, notFound(uri)
	}
	resp, err := m.registry.ReadSkill(ctx, &registry.SkillReadRequest{Name: name, Path: rel})
	if wire.IsCode(err, wire.NotFound) {
		return nil, notFound(uri)
	}
	if err != nil {
		return nil, m.registryError(ctx, err)
	}
	c := &contents{URI: uri, MIMEType: resp.MimeType, Blob: resp.Blob}
	if resp.Blob == nil {
		c.Text = &resp.Text
	}
	return c, nil
}

// readMemory reads vfs:///memories/<path> of the caller's own account
// through vfs-svc. The scope is the caller's account whatever the URI
// says, so another account's files cannot be named at all.
func (m *Server) readMemory(ctx context.Context, q *request, uri string) (*contents, *rpcError) {
	if q.principal == nil {
		return nil, m.unauthorized("reading your files needs a sign-in")
	}
	rel := strings.TrimPrefix(uri, memoriesPrefix)
	if rel == "" || path.Clean("/"+rel) != "/"+rel {
		return nil, notFound(uri)
	}
	resp, err := m.files.Read(ctx, &files.ReadRequest{Scope: files.Scope{AccountID: q.principal.AccountID},
		Path: files.MemoriesRoot + rel, Bytes: true, Limit: files.MaxReadBytes})
	if wire.IsCode(err, wire.NotFound) || wire.IsCode(err, wire.IsDir) {
		return nil, notFound(uri)
	}
	if err != nil {
		return nil, m.registryError(ctx, err)
	}
	mt := mime.TypeByExtension(path.Ext(rel))
	if mt == "" {
		mt = "text/plain"
	}
	return &contents{URI: uri, MIMEType: mt, Text: &resp.Content}, nil
}

// notFound is resources/read's error for an unknown URI.
func notFound(uri string) *rpcError {
	return newRPCError(http.StatusOK, codeResourceNotFound, "resource not found: %s", uri).withData(map[string]any{"uri": uri})
}
