package registrysvc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/registry"
)

// encodedList is a registry.tools.list reply already encoded as a
// registry.ListResponse; wire sends its bytes without encoding them again.
type encodedList struct{ body []byte }

// cachedList is one list answer: its ETag, the full reply, and the short
// reply for a caller that already holds it.
type cachedList struct {
	etag        string
	full        *encodedList
	notModified *encodedList
}

// PreencodedJSON implements wire.Preencoded.
func (l *encodedList) PreencodedJSON() []byte { return l.body }

// MarshalJSON keeps encodedList correct wherever it is encoded normally.
func (l *encodedList) MarshalJSON() ([]byte, error) { return l.body, nil }

// listCache holds the encoded list replies of one snapshot. A reply depends
// only on the snapshot, the caller's visibility profile and the data kinds
// that gate its tools, so a key built from those two (bounded: known agent
// profiles times subsets of the gating kinds) serves every account alike,
// and a reload starts from an empty cache with the new snapshot.
type listCache struct {
	mu     sync.Mutex
	byKey  map[string]*cachedList
	gating []string // the data kinds some tool requires, sorted
}

func newListCache(entries []*entry) *listCache {
	c := &listCache{byKey: map[string]*cachedList{}}
	for _, e := range entries {
		if k := e.tool.RequiresData; k != "" && !slices.Contains(c.gating, k) {
			c.gating = append(c.gating, k)
		}
	}
	slices.Sort(c.gating)
	return c
}

// key names the list reply for an agent profile and the caller's data kinds
// (nil: unknown, so every gated tool is listed).
func (c *listCache) key(profile agent.Name, kinds map[string]bool) string {
	var b strings.Builder
	b.WriteString(string(profile))
	if kinds == nil {
		b.WriteString("|*")
		return b.String()
	}
	for _, k := range c.gating {
		if kinds[k] {
			b.WriteString("|" + k)
		}
	}
	return b.String()
}

// profile is the caller's agent name as the policy sees it: agents without
// allow or deny lists behave like no agent, so they share its replies.
func (p *policy) profile(a agent.Name) agent.Name {
	if len(p.vis.Allowed[a]) == 0 && len(p.vis.Disallowed[a]) == 0 {
		return agent.AgentNone
	}
	return a
}

// listEncoded is the registry.tools.list handler, the one path that lists:
// the tools visible to the caller, sorted by name, with its external tools
// merged in (listExternal). The registry's own answer is encoded once per
// snapshot and key and then served as bytes, because encoding the reply
// (hundreds of KB for a thousand tools) is almost all of the cost. A caller
// that sends the answer's ETag gets a short "not modified" reply.
func (r *Registry) listEncoded(ctx context.Context, req *registry.ListRequest) (*encodedList, error) {
	s := r.current()
	kinds := r.callerKinds(ctx, req.Caller, s.sorted)
	ext := r.externalFor(ctx, req.Caller, req.Servers)
	stable := len(req.Servers) == 0 && r.stable(s, req.Caller)
	key := s.lists.key(r.policy.profile(req.Caller.Agent), kinds)
	if stable {
		// Its own entry, hence its own ETag: a "not modified" reply then
		// always means the same Stable as the answer it confirms.
		key += "|stable"
	}
	s.lists.mu.Lock()
	l := s.lists.byKey[key]
	s.lists.mu.Unlock()
	if l == nil {
		var err error
		if l, err = r.encodeList(s, req.Caller, kinds, key, stable); err != nil {
			return nil, err
		}
		s.lists.mu.Lock()
		s.lists.byKey[key] = l
		s.lists.mu.Unlock()
	}
	if len(ext.tools) > 0 || len(req.Servers) > 0 {
		return r.listExternal(s, req, kinds, l, ext)
	}
	if req.IfNoneMatch == l.etag {
		return l.notModified, nil
	}
	return l.full, nil
}

// stable reports whether c's answer from s changes only with an event
// this registry publishes after its own state changed: Changed (a new
// snapshot) or AccountChanged for c's account (its servers). It does not
// for an account whose data kinds gate tools (vfs-svc announces those, and
// a holder may hear it before this replica does) nor for one with servers
// (a server backing off or coming back changes the answer on its own).
// registry-svc/design.md "Stable lists".
func (r *Registry) stable(s *snapshot, c registry.Caller) bool {
	if c.Anonymous() {
		return true
	}
	return len(s.lists.gating) == 0 && (r.ext == nil || r.ext.serverless(c.AccountID))
}

// encodeList builds the cached answer for key.
func (r *Registry) encodeList(s *snapshot, c registry.Caller, kinds map[string]bool, key string, stable bool) (*cachedList, error) {
	sum := sha256.Sum256([]byte(s.revision + "\x00" + key))
	resp := r.listFor(s, c, kinds)
	resp.ETag = hex.EncodeToString(sum[:12])
	resp.Stable = stable
	full, err := json.Marshal(resp)
	if err != nil {
		return nil, fmt.Errorf("encoding the tool list: %w", err)
	}
	short, err := json.Marshal(&registry.ListResponse{Revision: s.revision, ETag: resp.ETag, NotModified: true, Stable: stable})
	if err != nil {
		return nil, fmt.Errorf("encoding the tool list: %w", err)
	}
	return &cachedList{etag: resp.ETag, full: &encodedList{body: full}, notModified: &encodedList{body: short}}, nil
}
