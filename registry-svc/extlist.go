package registrysvc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/registry"
)

// externalFor returns the caller's external tools: none for an anonymous
// caller, whose list must not depend on anyone's servers.
func (r *Registry) externalFor(ctx context.Context, c registry.Caller, turn []agent.ServerSpec) extSet {
	if r.ext == nil || c.Anonymous() {
		return extSet{}
	}
	return r.ext.toolsFor(ctx, c.AccountID, turn)
}

// mergeExternal adds the external tools the policy lets c see to base,
// sorted by name. A registry tool keeps its name against an external one.
func (r *Registry) mergeExternal(s *snapshot, c registry.Caller, base []registry.Tool, ext extSet) []registry.Tool {
	out := make([]registry.Tool, 0, len(base)+len(ext.tools))
	out = append(out, base...)
	for _, t := range ext.tools {
		if _, taken := s.byName[t.tool.Name]; taken {
			r.log.Warn("an external MCP tool is shadowed by a registry tool", "tool", t.tool.Name)
			continue
		}
		if r.policy.decide(c, t.tool.Name, "", nil) == visible {
			out = append(out, t.tool)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// listExternal answers a list for a caller with external tools. Its ETag
// covers the registry's answer (l) and the external set, so that a change
// of the account's servers or of their tools changes the answer; a list
// with a chat turn's servers has no ETag and is never cached.
func (r *Registry) listExternal(s *snapshot, req *registry.ListRequest, kinds map[string]bool, l *cachedList, ext extSet) (*encodedList, error) {
	etag := ""
	if len(req.Servers) == 0 {
		sum := sha256.Sum256([]byte(l.etag + "\x00" + ext.fingerprint))
		etag = hex.EncodeToString(sum[:12])
	}
	resp := &registry.ListResponse{Revision: s.revision, ETag: etag}
	if etag != "" && req.IfNoneMatch == etag {
		resp.NotModified = true
	} else {
		resp.Tools = r.mergeExternal(s, req.Caller, r.listFor(s, req.Caller, kinds).Tools, ext)
	}
	body, err := json.Marshal(resp)
	if err != nil {
		return nil, fmt.Errorf("encoding the tool list: %w", err)
	}
	return &encodedList{body: body}, nil
}

// externalTool finds the external tool a call names, as an entry the
// policy and the call path treat like any other.
func (r *Registry) externalTool(ctx context.Context, req *registry.CallRequest) *entry {
	for _, t := range r.externalFor(ctx, req.Caller, req.Servers).tools {
		if t.tool.Name == req.Name {
			return &entry{tool: t.tool, ext: t, retry: t.retry}
		}
	}
	return nil
}
