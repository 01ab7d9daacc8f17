package mcpserver

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/registry"
)

// listTrustTTL bounds how long a stable tools/list answer is reused without
// asking the registry: the events make it exact with one registry replica,
// and with several it bounds how long a replica that has not yet heard an
// account's change can keep its old answer here (design.md "List tail").
const listTrustTTL = time.Second

// listEpoch names what the gateway has heard of the tool change events. Two
// equal epochs mean no event arrived and none can have been lost between
// them (the connection did not reconnect, no subscription dropped a
// message); ok is false while that cannot be said (disconnected).
type listEpoch struct {
	changes    uint64
	reconnects uint64
	dropped    int
	ok         bool
}

// listEpoch returns the hub's current epoch.
func (h *hub) listEpoch() listEpoch {
	if h.nc == nil || !h.subscribed.Load() || h.nc.Status() != nats.CONNECTED {
		return listEpoch{}
	}
	e := listEpoch{changes: h.changes.Load(), reconnects: h.nc.Stats().Reconnects, ok: true}
	for _, s := range h.toolSubs {
		n, err := s.Dropped()
		if err != nil { // unsubscribed or closed: the events no longer arrive
			return listEpoch{}
		}
		e.dropped += n
	}
	return e
}

// trustedLists keeps, per caller, the registry's last stable answer
// (registry.ListResponse.Stable) and the epoch it was asked in: while the
// epoch holds, no event said the answer changed, so tools/list reuses it
// without the registry round trip. Anything else (another epoch, an answer
// not stable, older than listTrustTTL) asks the registry, which
// revalidates by ETag.
type trustedLists struct {
	mu       sync.Mutex
	byCaller map[trustKey]trustedList
	now      func() time.Time
}

// trustKey is what a registry answer depends on, on the caller's side
// (as registry.Client keys its answers).
type trustKey struct{ account, agent string }

// trustedList is one reusable answer.
type trustedList struct {
	resp  *registry.ListResponse
	epoch listEpoch
	at    time.Time
}

// get returns c's answer when it may be reused in epoch now, or nil.
func (t *trustedLists) get(c registry.Caller, now listEpoch) *registry.ListResponse {
	if !now.ok {
		return nil
	}
	t.mu.Lock()
	e, ok := t.byCaller[trustKey{c.AccountID, string(c.Agent)}]
	t.mu.Unlock()
	if !ok || e.epoch != now || t.now().Sub(e.at) >= listTrustTTL {
		return nil
	}
	return e.resp
}

// put records resp, asked for c in epoch asked (taken before the request,
// so that an event arriving meanwhile makes it untrusted), or forgets c's
// answer when resp may not be reused.
func (t *trustedLists) put(c registry.Caller, asked listEpoch, resp *registry.ListResponse) {
	k := trustKey{c.AccountID, string(c.Agent)}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !asked.ok || !resp.Stable {
		delete(t.byCaller, k)
		return
	}
	if t.byCaller == nil || len(t.byCaller) >= maxEncodedLists {
		t.byCaller = map[trustKey]trustedList{}
	}
	t.byCaller[k] = trustedList{resp: resp, epoch: asked, at: t.now()}
}
