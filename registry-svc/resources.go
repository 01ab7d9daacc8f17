package registrysvc

import (
	"context"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mirobody/mirobody-go/registry-svc/internal/builtin"
	"github.com/mirobody/mirobody-go/registry-svc/internal/pyhost"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/wire"
)

// uiMimeType is the MIME type of MCP Apps HTML (SEP-1865): a ui:// page a
// tool names in its _meta.ui.resourceUri.
const uiMimeType = "text/html;profile=mcp-app"

// resourceHandlers serve registry.resources.*, registry.prompts.* and
// registry.completion.complete (design.md "Resources and prompts from tool folders"):
// the files of MCP_RESOURCE_DIRS, read on every request like the skills,
// and the RESOURCES and PROMPTS the current snapshot's Python host found.
type resourceHandlers struct {
	reg  *Registry
	dirs []string
}

func (h *resourceHandlers) register(svc *wire.Service) error {
	return errors.Join(
		wire.Serve(svc, registry.ResourcesList, h.list),
		wire.Serve(svc, registry.ResourcesRead, h.read),
		wire.Serve(svc, registry.PromptsList, h.prompts),
		wire.Serve(svc, registry.PromptsGet, h.get),
		wire.Serve(svc, registry.Complete, h.complete),
	)
}

// staticFile is one file of a resource folder: <dir>/<scheme>/<path> is
// the resource <scheme>://<path>.
type staticFile struct {
	uri, dir, rel string
	info          builtin.SkillFileInfo
}

// staticFiles lists the resource folders' files; the first folder wins a
// URI. Files directly in a folder name no scheme and are left out.
func staticFiles(dirs []string) []staticFile {
	var out []staticFile
	seen := map[string]bool{}
	for _, d := range dirs {
		for _, f := range builtin.SkillFiles(d) {
			scheme, rest, ok := strings.Cut(f.Path, "/")
			if !ok || rest == "" {
				continue
			}
			uri := scheme + "://" + rest
			if seen[uri] {
				continue
			}
			seen[uri] = true
			if scheme == "ui" && (f.MimeType == "text/html" || strings.HasPrefix(f.MimeType, "text/html;")) {
				f.MimeType = uiMimeType
			}
			out = append(out, staticFile{uri: uri, dir: d, rel: f.Path, info: f})
		}
	}
	return out
}

func (h *resourceHandlers) list(context.Context, *registry.ResourceListRequest) (*registry.ResourceListResponse, error) {
	out := &registry.ResourceListResponse{Resources: []registry.Resource{}, Templates: []registry.ResourceTemplate{}}
	seen := map[string]bool{}
	for _, f := range staticFiles(h.dirs) {
		seen[f.uri] = true
		name := f.rel[strings.LastIndexByte(f.rel, '/')+1:]
		out.Resources = append(out.Resources, registry.Resource{URI: f.uri, Name: name, MimeType: f.info.MimeType, Size: f.info.Size})
	}
	for _, r := range h.reg.current().resources {
		switch {
		case r.URITemplate != "":
			out.Templates = append(out.Templates, registry.ResourceTemplate{URITemplate: r.URITemplate, Name: r.Name,
				Title: r.Title, Description: r.Description, MimeType: r.MimeType, Meta: r.Meta})
		case !seen[r.URI]:
			seen[r.URI] = true
			out.Resources = append(out.Resources, r.Resource)
		}
	}
	slices.SortFunc(out.Resources, func(a, b registry.Resource) int { return strings.Compare(a.URI, b.URI) })
	slices.SortFunc(out.Templates, func(a, b registry.ResourceTemplate) int { return strings.Compare(a.URITemplate, b.URITemplate) })
	return out, nil
}

func (h *resourceHandlers) read(ctx context.Context, req *registry.ResourceReadRequest) (*registry.ResourceReadResponse, error) {
	for _, f := range staticFiles(h.dirs) {
		if f.uri != req.URI {
			continue
		}
		data, err := builtin.ReadSkillFile(f.dir, f.rel)
		if err != nil {
			return nil, wire.Errorf(wire.NotFound, "no resource %s", req.URI)
		}
		c := registry.ResourceContents{URI: req.URI, MimeType: f.info.MimeType}
		if utf8.Valid(data) {
			text := string(data)
			c.Text = &text
		} else {
			c.Blob = data
		}
		return &registry.ResourceReadResponse{Contents: []registry.ResourceContents{c}}, nil
	}
	pool, err := h.pool(req.URI)
	if err != nil {
		return nil, err
	}
	return pool.ReadResource(ctx, req.URI)
}

func (h *resourceHandlers) prompts(context.Context, *registry.PromptListRequest) (*registry.PromptListResponse, error) {
	out := &registry.PromptListResponse{Prompts: slices.Clone(h.reg.current().prompts)}
	if out.Prompts == nil {
		out.Prompts = []registry.Prompt{}
	}
	slices.SortFunc(out.Prompts, func(a, b registry.Prompt) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (h *resourceHandlers) get(ctx context.Context, req *registry.PromptGetRequest) (*registry.PromptGetResponse, error) {
	pool, err := h.pool("prompt " + req.Name)
	if err != nil {
		return nil, err
	}
	return pool.GetPrompt(ctx, req)
}

func (h *resourceHandlers) complete(ctx context.Context, req *registry.CompleteRequest) (*registry.CompleteResponse, error) {
	if (req.Prompt == "") == (req.Template == "") {
		return nil, wire.Errorf(wire.InvalidArgument, "name either a prompt or a template")
	}
	pool, err := h.pool("completion")
	if err != nil {
		return nil, err
	}
	return pool.Complete(ctx, req)
}

// pool is the current snapshot's Python host; with no Python folder there
// is nothing to find (not_found names what).
func (h *resourceHandlers) pool(what string) (*pyhost.Pool, error) {
	if p := h.reg.current().pool; p != nil {
		return p, nil
	}
	return nil, wire.Errorf(wire.NotFound, "no %s", what)
}
