package mcpserver

import (
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/userdata"
)

// TestTrustedListsHoldUntilAnEvent: a stable answer is reused while no
// tool change event arrived, for its own caller only; each event that can
// change a list (a new registry revision, the account's servers, the
// account's data) ends the reuse, and so does the subscription ending.
func TestTrustedListsHoldUntilAnEvent(t *testing.T) {
	url := servicetest.NATS(t)
	pub := servicetest.Conn(t, url)
	alice := registry.Caller{AccountID: "a1"}
	for _, subject := range []string{registry.Changed.Subject, registry.AccountChanged.For("a1").Subject, userdata.DataChanged.For("a1").Subject} {
		t.Run(subject, func(t *testing.T) {
			h, err := newHub(servicetest.Conn(t, url))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(h.close)
			now := time.Unix(1000, 0)
			tl := &trustedLists{now: func() time.Time { return now }}
			stable := &registry.ListResponse{Revision: "r1", ETag: "e1", Stable: true}

			asked := h.listEpoch()
			if !asked.ok {
				t.Fatal("a connected hub has no epoch")
			}
			tl.put(alice, asked, stable)
			if got := tl.get(alice, h.listEpoch()); got != stable {
				t.Fatalf("the stable answer is not reused: %v", got)
			}
			for _, c := range []registry.Caller{{AccountID: "a2"}, {}, {AccountID: "a1", Agent: "deep"}} {
				if got := tl.get(c, h.listEpoch()); got != nil {
					t.Errorf("caller %+v got alice's answer", c)
				}
			}
			now = now.Add(listTrustTTL)
			if tl.get(alice, h.listEpoch()) != nil {
				t.Error("an answer older than listTrustTTL is reused")
			}
			now = now.Add(-listTrustTTL)

			// The listener wakes after the hub counted the event.
			l, remove := h.add("a1")
			defer remove()
			if err := pub.Publish(subject, []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
			select {
			case <-l.ch:
			case <-time.After(10 * time.Second):
				t.Fatal("the hub did not hear the event")
			}
			if got := tl.get(alice, h.listEpoch()); got != nil {
				t.Error("the answer is reused after an event")
			}
			// Asked before the event, answered after it: not reused.
			tl.put(alice, asked, stable)
			if tl.get(alice, h.listEpoch()) != nil {
				t.Error("an answer asked before the event is reused")
			}

			tl.put(alice, h.listEpoch(), &registry.ListResponse{Revision: "r1", ETag: "e2"})
			if tl.get(alice, h.listEpoch()) != nil {
				t.Error("an answer that is not stable is reused")
			}

			tl.put(alice, h.listEpoch(), stable)
			h.close()
			if e := h.listEpoch(); e.ok {
				t.Error("the hub has an epoch after its subscriptions ended")
			}
		})
	}
}
