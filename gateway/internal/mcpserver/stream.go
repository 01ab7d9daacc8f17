package mcpserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/gateway/internal/authn"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/vfs/userdata"
)

// sseWriter writes Server-Sent Events; send may be called from several
// goroutines.
type sseWriter struct {
	mu sync.Mutex
	w  http.ResponseWriter
	rc *http.ResponseController
}

// startSSE commits a 200 event-stream response.
func startSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	_ = s.rc.Flush()
	return s
}

// send writes v as one message event.
func (s *sseWriter) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding an event: %w", err)
	}
	return s.write("event: message\ndata: " + string(b) + "\n\n")
}

// keepAlive writes an SSE comment, which clients ignore and proxies see as
// traffic.
func (s *sseWriter) keepAlive() error { return s.write(": keep-alive\n\n") }

func (s *sseWriter) write(text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.w.Write([]byte(text)); err != nil {
		return fmt.Errorf("writing an event: %w", err)
	}
	return s.rc.Flush()
}

// hub fans tool-set changes out to open streams: events.registry.changed
// concerns everyone, events.data.changed.<account> one account (its gated
// tools appear or vanish), and so does events.registry.changed.<account>
// (its external MCP servers changed).
type hub struct {
	mu        sync.Mutex
	listeners map[*listener]struct{}
	subs      []*nats.Subscription
	done      chan struct{}
	closeOnce sync.Once
	// subsOf are the legacy sessions' resource subscriptions (subscribe.go).
	subsOf *subscriptions
	// nc, toolSubs and changes (counted tool change events) make the
	// epoch under which tools/list answers are reused (listtrust.go).
	nc       *nats.Conn
	toolSubs []*nats.Subscription
	changes  atomic.Uint64
	// subscribed is set once the server confirmed the subscriptions.
	subscribed atomic.Bool
}

// listener is one open stream's mailbox: the changes not yet sent, and ch,
// which holds at most one wake-up, since a pending list_changed is never
// worth sending twice.
type listener struct {
	account string
	ch      chan struct{}
	mu      sync.Mutex
	pending changes
}

// changes are what a stream has to tell its client: which lists changed,
// and the URIs whose contents changed (subscribe.go filters them by the
// stream's subscriptions).
type changes struct {
	tools, resources, prompts bool
	updated                   []string
}

// put records a change and wakes the stream.
func (l *listener) put(f func(*changes)) {
	l.mu.Lock()
	f(&l.pending)
	l.mu.Unlock()
	select {
	case l.ch <- struct{}{}:
	default:
	}
}

// take returns the pending changes and clears them.
func (l *listener) take() changes {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.pending
	l.pending = changes{}
	return c
}

// newHub subscribes to the change events on nc.
func newHub(nc *nats.Conn) (*hub, error) {
	h := &hub{listeners: map[*listener]struct{}{}, done: make(chan struct{}), nc: nc}
	sub, err := nc.Subscribe(registry.Changed.Subject, func(*nats.Msg) { h.notify("") })
	if err != nil {
		return nil, fmt.Errorf("subscribing to %s: %w", registry.Changed.Subject, err)
	}
	h.subs = append(h.subs, sub)
	sub, err = nc.Subscribe(userdata.DataChanged.Subject, func(msg *nats.Msg) {
		if acct := userdata.DataChanged.Token(msg.Subject); acct != "" {
			h.notify(acct)
		}
	})
	if err != nil {
		h.close()
		return nil, fmt.Errorf("subscribing to %s: %w", userdata.DataChanged.Subject, err)
	}
	h.subs = append(h.subs, sub)
	sub, err = nc.Subscribe(registry.AccountChanged.Subject, func(msg *nats.Msg) {
		if acct := registry.AccountChanged.Token(msg.Subject); acct != "" {
			h.notify(acct)
		}
	})
	if err != nil {
		h.close()
		return nil, fmt.Errorf("subscribing to %s: %w", registry.AccountChanged.Subject, err)
	}
	h.subs = append(h.subs, sub)
	h.toolSubs = slices.Clone(h.subs)
	if err := h.subscribeResources(nc); err != nil {
		h.close()
		return nil, err
	}
	// A subscription counts only once the server has it: an event
	// published before that would be missed, and a tools/list reused
	// meanwhile would be stale (listEpoch). A flush is the round trip that
	// says so; while it fails (disconnected at start), the lists are not
	// reused and confirming is tried again in the background.
	if nc.FlushTimeout(subscribeConfirmTimeout) == nil {
		h.subscribed.Store(true)
	} else {
		go h.confirmSubscriptions()
	}
	return h, nil
}

// subscribeConfirmTimeout bounds one wait for the server to confirm the
// hub's subscriptions.
const subscribeConfirmTimeout = 2 * time.Second

// confirmSubscriptions retries the flush of newHub until it succeeds or
// the hub closes.
func (h *hub) confirmSubscriptions() {
	for {
		select {
		case <-h.done:
			return
		case <-time.After(subscribeConfirmTimeout):
		}
		if h.nc.FlushTimeout(subscribeConfirmTimeout) == nil {
			h.subscribed.Store(true)
			return
		}
	}
}

// add registers a listener for account ("" for anonymous streams, which
// only see registry-wide changes).
func (h *hub) add(account string) (*listener, func()) {
	l := &listener{account: account, ch: make(chan struct{}, 1)}
	h.mu.Lock()
	h.listeners[l] = struct{}{}
	h.mu.Unlock()
	return l, func() {
		h.mu.Lock()
		delete(h.listeners, l)
		h.mu.Unlock()
	}
}

// notify tells the listeners of account, or all of them when account is
// "", that the tools changed.
func (h *hub) notify(account string) {
	// Counted first: a list asked from now on is asked in a new epoch.
	h.changes.Add(1)
	h.each(account, func(c *changes) { c.tools = true })
}

// each records a change for the listeners of account, or all of them when
// account is "".
func (h *hub) each(account string, f func(*changes)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for l := range h.listeners {
		if account == "" || l.account == account {
			l.put(f)
		}
	}
}

// close unsubscribes and ends every open stream.
func (h *hub) close() {
	h.closeOnce.Do(func() {
		for _, s := range h.subs {
			_ = s.Unsubscribe()
		}
		close(h.done)
	})
}

// get serves the legacy GET stream, which carries every list_changed and
// the updates of the session's resource subscriptions.
func (m *Server) get(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(headerProtocolVersion) == modernVersion {
		w.Header().Set("Allow", "POST")
		writeRPCError(w, nullID, newRPCError(http.StatusMethodNotAllowed, jsonrpc.CodeInvalidRequest, "GET streams do not exist in protocol version %s: use subscriptions/listen", modernVersion))
		return
	}
	p, e := m.authenticate(r)
	if e == nil {
		e = m.admit(r, p)
	}
	if e != nil {
		writeRPCError(w, nullID, e)
		return
	}
	if !acceptsSSE(r) {
		writeRPCError(w, nullID, newRPCError(http.StatusNotAcceptable, jsonrpc.CodeInvalidRequest, "GET /mcp needs Accept: text/event-stream"))
		return
	}
	account := ""
	if p != nil {
		account = p.AccountID
	}
	o := optIn{tools: true, resources: true, prompts: true}
	if sid := r.Header.Get(headerSessionID); sid != "" {
		s, err := m.sealer.open(sid, account)
		if err != nil || m.revoked.Has(s.Nonce) {
			writeRPCError(w, nullID, newRPCError(http.StatusNotFound, codeSessionNotFound, "session not found: initialize again"))
			return
		}
		o.subscribed = func(changed string) []string { return m.hub.subsOf.matching(s.Nonce, changed) }
	}
	m.stream(w, r, p, streamHooks{change: func(sse *sseWriter, c changes) error { return sendChanges(sse, c, nil, o) }})
}

// listen serves the modern subscriptions/listen: an acknowledgement, then
// the opted-in notifications, until the client closes the stream.
func (m *Server) listen(w http.ResponseWriter, q *request, msg *rpcMessage) {
	var p mcp.SubscriptionsListenParams
	if err := json.Unmarshal(msg.Params, &p); err != nil || p.Notifications == nil {
		writeRPCError(w, msg.ID, newRPCError(http.StatusBadRequest, jsonrpc.CodeInvalidParams, "invalid params: notifications is required"))
		return
	}
	taskIDs, taskSends, stopTasks, e := m.listenTasks(q, msg)
	if e != nil {
		writeRPCError(w, msg.ID, e)
		return
	}
	defer stopTasks()
	meta := mcp.Meta{mcp.MetaKeySubscriptionID: msg.ID} // the raw id, unchanged
	// Everything a client may ask for is honoured, so the acknowledgement
	// echoes the request.
	ack := *p.Notifications
	first := rpcNotification{JSONRPC: "2.0", Method: "notifications/subscriptions/acknowledged",
		Params: acknowledged(meta, ack, taskIDs)}
	o := optIn{tools: ack.ToolsListChanged, resources: ack.ResourcesListChanged, prompts: ack.PromptsListChanged}
	if len(ack.ResourceSubscriptions) > 0 {
		if e := m.checkSubscriptions(q, ack.ResourceSubscriptions); e != nil {
			writeRPCError(w, msg.ID, e)
			return
		}
		o.subscribed = func(changed string) []string {
			var out []string
			for _, uri := range ack.ResourceSubscriptions {
				if covers(changed, uri) {
					out = append(out, uri)
				}
			}
			return out
		}
	}
	onChange := func(sse *sseWriter, c changes) error { return sendChanges(sse, c, meta, o) }
	m.stream(w, q.r, q.principal, streamHooks{
		open:   func(sse *sseWriter) error { return sse.send(first) },
		change: onChange,
		sends:  taskSends,
		// The server ends the subscription (shutdown): a result says so.
		close: func(sse *sseWriter) {
			r := &mcp.SubscriptionsListenResult{Meta: mcp.Meta{}}
			r.ResultType = "complete"
			_ = sse.send(rpcResponse{JSONRPC: "2.0", ID: msg.ID, Result: r})
		},
	})
}

// streamHooks are what one kind of stream sends: open once at the start,
// change on every visible change, each function from sends as it comes
// (task notifications), close when the gateway stops. Any hook may be nil
// but change.
type streamHooks struct {
	open   func(*sseWriter) error
	change func(*sseWriter, changes) error
	sends  <-chan func(*sseWriter) error
	close  func(*sseWriter)
}

// stream holds an SSE response open: it sends keep-alives, runs the hooks,
// and ends when the client leaves or the gateway stops. Streams are bounded
// per account (or per IP when anonymous).
func (m *Server) stream(w http.ResponseWriter, r *http.Request, p *authn.Principal, hooks streamHooks) {
	account := ""
	if p != nil {
		account = p.AccountID
	}
	release, ok := m.Limits.OpenStream(r, p)
	if !ok {
		e := newRPCError(http.StatusTooManyRequests, jsonrpc.CodeInternalError, "too many open streams for this account")
		e.Header = map[string]string{"Retry-After": "30"}
		writeRPCError(w, nullID, e)
		return
	}
	defer release()
	l, remove := m.hub.add(account)
	defer remove()
	sse := startSSE(w)
	if hooks.open != nil && hooks.open(sse) != nil {
		return
	}
	tick := time.NewTicker(m.KeepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-m.hub.done:
			if hooks.close != nil {
				hooks.close(sse)
			}
			return
		case <-l.ch:
			if hooks.change(sse, l.take()) != nil {
				return
			}
		case send := <-hooks.sends:
			if send(sse) != nil {
				return
			}
		case <-tick.C:
			if sse.keepAlive() != nil {
				return
			}
		}
	}
}

// delete ends a legacy session: its nonce joins the revocations of every
// replica (sealed ids cannot be recalled, so they are refused instead).
func (m *Server) delete(w http.ResponseWriter, r *http.Request) {
	p, e := m.authenticate(r)
	if e != nil {
		writeRPCError(w, nullID, e)
		return
	}
	sid := r.Header.Get(headerSessionID)
	if sid == "" {
		writeRPCError(w, nullID, newRPCError(http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "DELETE needs an %s header", headerSessionID))
		return
	}
	account := ""
	if p != nil {
		account = p.AccountID
	}
	sess, err := m.sealer.open(sid, account)
	if err != nil || m.revoked.Has(sess.Nonce) {
		writeRPCError(w, nullID, newRPCError(http.StatusNotFound, codeSessionNotFound, "session not found"))
		return
	}
	ev := sessionDeleted{Nonce: sess.Nonce, Until: m.sealer.expiry(sess)}
	m.revoked.Add(ev.Nonce, ev.Until)
	if b, err := json.Marshal(ev); err == nil {
		if err := m.Conn.Publish(subjectSessionDeleted, b); err != nil {
			m.Log.WarnContext(r.Context(), "publishing a session deletion failed", "err", err)
		}
	}
	w.WriteHeader(http.StatusNoContent)
}
