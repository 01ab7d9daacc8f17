package registrysvc

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/vfs/userdata"
)

// decision is what the policy says about one tool for one caller.
type decision int

const (
	// visible: listed and callable.
	visible decision = iota
	// hidden: neither listed nor callable (registry-svc/design.md "Tool
	// visibility"); a call is not_found.
	hidden
	// noData: not listed for this account (registry-svc/design.md "Data
	// gating"); a call returns a result explaining that no data exists.
	noData
)

// Visibility holds the per-agent allow and deny lists (registry-svc/design.md "Tool visibility").
type Visibility struct {
	Allowed    map[agent.Name][]string // agent -> whitelist
	Disallowed map[agent.Name][]string // agent -> blacklist
}

// warnUnknown logs, once per list, the names in the lists that name no
// tool: none of known's and, for DEEP, none of the Deep agent's own (which
// obey the same lists). An external server's tools (<server>__<tool>)
// belong to one account and are not checked.
func (v Visibility) warnUnknown(known func(string) bool, log *slog.Logger) {
	for _, l := range []struct {
		prefix string
		lists  map[agent.Name][]string
	}{{"ALLOWED_TOOLS_", v.Allowed}, {"DISALLOWED_TOOLS_", v.Disallowed}} {
		for _, a := range []agent.Name{agent.AgentDeep, agent.AgentBase} {
			var unknown []string
			for _, name := range l.lists[a] {
				own := a == agent.AgentDeep && slices.Contains(agent.DeepOwnTools, name)
				if !own && !known(name) && !strings.Contains(name, "__") {
					unknown = append(unknown, name)
				}
			}
			if len(unknown) > 0 {
				log.Warn("a tool visibility list names tools that do not exist; check their spelling", "key", l.prefix+strings.ToUpper(string(a)), "tools", unknown)
			}
		}
	}
}

// policy decides list and call alike, so a tool that is not listed cannot
// be called.
type policy struct {
	vis   Visibility
	kinds *kindsCache
}

// decide applies the agent's whitelist, then its blacklist (which always
// wins), then data gating for authenticated callers. kinds is the caller's
// data kinds, or nil when unknown (anonymous, or the probe failed).
func (p *policy) decide(c registry.Caller, name, requires string, kinds map[string]bool) decision {
	if c.Agent != agent.AgentNone {
		if allow := p.vis.Allowed[c.Agent]; len(allow) > 0 && !slices.Contains(allow, name) {
			return hidden
		}
		if slices.Contains(p.vis.Disallowed[c.Agent], name) {
			return hidden
		}
	}
	if requires != "" && kinds != nil && !kinds[requires] {
		return noData
	}
	return visible
}

// kindsCache remembers which data kinds each account holds, until
// events.data.changed.<account> says otherwise.
type kindsCache struct {
	data    *userdata.Data
	log     *slog.Logger
	timeout time.Duration
	byAcct  *genCache[map[string]bool]
}

func newKindsCache(data *userdata.Data, log *slog.Logger) *kindsCache {
	return &kindsCache{data: data, log: log, timeout: 2 * time.Second, byAcct: newGenCache[map[string]bool]()}
}

// get returns the account's data kinds, or nil when they cannot be known
// (the caller then lists gated tools, as registry-svc/design.md "Data gating" says).
func (k *kindsCache) get(ctx context.Context, account string) map[string]bool {
	set, gen, ok := k.byAcct.get(account)
	if ok {
		return set
	}
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	resp, err := k.data.Kinds(ctx, &userdata.DataKindsRequest{AccountID: account})
	if err != nil {
		k.log.WarnContext(ctx, "data kinds probe failed; gated tools stay listed", "account", account, "err", err)
		return nil
	}
	set = make(map[string]bool, len(resp.Kinds))
	for _, kind := range resp.Kinds {
		set[kind] = true
	}
	k.byAcct.put(account, gen, set)
	return set
}

// invalidate forgets what the cache knows about account.
func (k *kindsCache) invalidate(account string) {
	k.byAcct.invalidate(account)
}
