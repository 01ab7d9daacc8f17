package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/vfs/files"
)

// subjectSubscription tells every gateway replica that a legacy session
// subscribed to a resource or unsubscribed (design.md "Subscriptions"): its
// GET stream may be open on any of them.
const subjectSubscription = "events.gateway.resource_subscription"

// maxSubscriptions bounds the URIs one session or listen stream subscribes
// to: every replica holds a session's subscriptions.
const maxSubscriptions = 256

// maxPendingUpdates bounds the updated URIs one stream holds unsent; a
// client that reads too slowly misses the rest rather than growing us.
const maxPendingUpdates = 1024

// subscriptionEvent is the event on subjectSubscription.
type subscriptionEvent struct {
	Nonce string `json:"nonce"`
	URI   string `json:"uri"`
	On    bool   `json:"on"`
	// Until is when the session expires; its subscriptions go with it.
	Until time.Time `json:"until"`
	// From names the replica that applied it already, which ignores its
	// own copy: a copy arriving after a later change would undo it.
	From string `json:"from"`
}

// subscriptions are the legacy sessions' resource subscriptions, by session
// nonce, as every replica learns them from subjectSubscription.
type subscriptions struct {
	mu      sync.Mutex
	byNonce map[string]*sessionSubs
	now     func() time.Time
	// id names this replica in the events it publishes.
	id string
}

type sessionSubs struct {
	uris  map[string]bool
	until time.Time
}

// apply records ev, and forgets the sessions that expired.
func (s *subscriptions) apply(ev *subscriptionEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for n, ss := range s.byNonce {
		if now.After(ss.until) {
			delete(s.byNonce, n)
		}
	}
	ss := s.byNonce[ev.Nonce]
	switch {
	case ss == nil && !ev.On:
		return
	case ss == nil:
		ss = &sessionSubs{uris: map[string]bool{}, until: ev.Until}
		s.byNonce[ev.Nonce] = ss
	}
	if ev.On {
		if len(ss.uris) < maxSubscriptions {
			ss.uris[ev.URI] = true
		}
		return
	}
	delete(ss.uris, ev.URI)
	if len(ss.uris) == 0 {
		delete(s.byNonce, ev.Nonce)
	}
}

// count returns how many URIs nonce subscribed to.
func (s *subscriptions) count(nonce string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.byNonce[nonce]; ss != nil {
		return len(ss.uris)
	}
	return 0
}

// matching returns the URIs nonce subscribed to that changed covers.
func (s *subscriptions) matching(nonce, changed string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.byNonce[nonce]
	if ss == nil {
		return nil
	}
	var out []string
	for uri := range ss.uris {
		if covers(changed, uri) {
			out = append(out, uri)
		}
	}
	return out
}

// covers says a change of changed concerns the subscribed URI: the same
// resource, or a folder above it (a user folder deleted or moved).
func covers(changed, subscribed string) bool {
	return subscribed == changed || strings.HasPrefix(subscribed, strings.TrimSuffix(changed, "/")+"/")
}

// subscribeResources follows what changes resources and prompts: the
// registry's skills and tool folders (everyone's), an account's files
// (that account's streams only), and the legacy subscriptions.
func (h *hub) subscribeResources(nc *nats.Conn) error {
	h.subsOf = &subscriptions{byNonce: map[string]*sessionSubs{}, now: time.Now, id: nats.NewInbox()}
	for subject, handle := range map[string]nats.MsgHandler{
		registry.ResourcesChanged.Subject: func(msg *nats.Msg) {
			ev, err := registry.ResourcesChanged.Decode(msg)
			if err != nil {
				return
			}
			h.each("", func(c *changes) {
				c.resources = c.resources || ev.ResourcesListChanged
				c.prompts = c.prompts || ev.PromptsListChanged
				c.addUpdated(ev.Updated...)
			})
		},
		files.Changed.Subject: func(msg *nats.Msg) {
			ev, err := files.Changed.Decode(msg)
			acct := files.Changed.Token(msg.Subject)
			if err != nil || acct == "" {
				return
			}
			uris := make([]string, 0, len(ev.Paths))
			for _, p := range ev.Paths {
				uris = append(uris, "vfs://"+p)
			}
			h.each(acct, func(c *changes) { c.addUpdated(uris...) })
		},
		subjectSubscription: func(msg *nats.Msg) {
			var ev subscriptionEvent
			if json.Unmarshal(msg.Data, &ev) == nil && ev.Nonce != "" && ev.URI != "" && ev.From != h.subsOf.id {
				h.subsOf.apply(&ev)
			}
		},
	} {
		sub, err := nc.Subscribe(subject, handle)
		if err != nil {
			return fmt.Errorf("subscribing to %s: %w", subject, err)
		}
		h.subs = append(h.subs, sub)
	}
	return nil
}

// addUpdated adds URIs not pending yet, up to maxPendingUpdates.
func (c *changes) addUpdated(uris ...string) {
	for _, u := range uris {
		if len(c.updated) < maxPendingUpdates && !slices.Contains(c.updated, u) {
			c.updated = append(c.updated, u)
		}
	}
}

// optIn is what one stream delivers: the legacy GET stream every list and
// its session's subscriptions, a subscriptions/listen stream what it asked
// for. subscribed returns the stream's subscribed URIs a changed URI
// covers.
type optIn struct {
	tools, resources, prompts bool
	subscribed                func(changed string) []string
}

// sendChanges writes the notifications c calls for under o; meta tags them
// with the subscription in the modern era.
func sendChanges(sse *sseWriter, c changes, meta mcp.Meta, o optIn) error {
	for _, n := range []struct {
		on     bool
		method string
	}{
		{c.tools && o.tools, "notifications/tools/list_changed"},
		{c.resources && o.resources, "notifications/resources/list_changed"},
		{c.prompts && o.prompts, "notifications/prompts/list_changed"},
	} {
		if n.on {
			if err := sse.send(notification(n.method, meta, nil)); err != nil {
				return err
			}
		}
	}
	if o.subscribed == nil {
		return nil
	}
	sent := map[string]bool{}
	for _, changed := range c.updated {
		for _, uri := range o.subscribed(changed) {
			if sent[uri] {
				continue
			}
			sent[uri] = true
			if err := sse.send(notification("notifications/resources/updated", meta, map[string]any{"uri": uri})); err != nil {
				return err
			}
		}
	}
	return nil
}

// notification is a server notification: params plus _meta when given.
func notification(method string, meta mcp.Meta, params map[string]any) rpcNotification {
	if meta != nil {
		if params == nil {
			params = map[string]any{}
		}
		params["_meta"] = meta
	}
	n := rpcNotification{JSONRPC: "2.0", Method: method}
	if params != nil {
		n.Params = params
	}
	return n
}

// subscribe serves the legacy resources/subscribe and resources/unsubscribe
// (on). A subscription belongs to the session, so it needs one; any URI is
// accepted, since a user file may be subscribed before it exists. The
// session's GET stream, on whichever replica, carries the updates.
func (m *Server) subscribe(ctx context.Context, q *request, msg *rpcMessage, on bool) (any, *rpcError) {
	var p struct {
		URI string `json:"uri"`
	}
	if err := json.Unmarshal(msg.Params, &p); err != nil || p.URI == "" {
		return nil, newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "invalid params: %s needs a uri", msg.Method)
	}
	if q.session == nil {
		return nil, newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "%s needs a session: initialize first", msg.Method)
	}
	if e := m.checkSubscriptions(q, []string{p.URI}); e != nil {
		return nil, e
	}
	if on && m.hub.subsOf.count(q.session.Nonce) >= maxSubscriptions {
		return nil, newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "a session subscribes to at most %d resources", maxSubscriptions)
	}
	ev := &subscriptionEvent{Nonce: q.session.Nonce, URI: p.URI, On: on, Until: m.sealer.expiry(q.session), From: m.hub.subsOf.id}
	m.hub.subsOf.apply(ev)
	if b, err := json.Marshal(ev); err == nil {
		if err := m.Conn.Publish(subjectSubscription, b); err != nil {
			m.Log.WarnContext(ctx, "publishing a resource subscription failed", "err", err)
		}
	}
	return struct{}{}, nil
}

// checkSubscriptions refuses an anonymous subscription to user files (like
// reading them, it needs a sign-in) and more than maxSubscriptions URIs.
func (m *Server) checkSubscriptions(q *request, uris []string) *rpcError {
	if len(uris) > maxSubscriptions {
		return newRPCError(http.StatusBadRequest, jsonrpc.CodeInvalidParams, "invalid params: at most %d resourceSubscriptions", maxSubscriptions)
	}
	for _, uri := range uris {
		if strings.HasPrefix(uri, memoriesPrefix) && q.principal == nil {
			return m.unauthorized("subscribing to your files needs a sign-in")
		}
	}
	return nil
}
