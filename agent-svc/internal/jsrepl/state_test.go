package jsrepl

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/servicetest"
)

// Five chats each keeping about 9 MiB in a store that keeps at most
// 32 MiB: the least recently used states are dropped (their next eval
// says so), the most recent stay, and the heap stays near the cap.
func TestStateCapEvictsLeastRecentlyUsed(t *testing.T) {
	const limit = 32 << 20
	s := NewStore(Options{Timeout: 30 * time.Second, MaxMemory: testBudget, MaxStateBytes: limit, Log: servicetest.Logger(t)})
	base := liveHeap()
	keep := `globalThis.keep = []; for (let i = 0; i < 2 ** 18; i++) keep.push(i); keep.length`
	for i := range 5 {
		if res := s.Eval(context.Background(), &EvalRequest{Account: "acc", Session: fmt.Sprint("chat", i), Code: keep}); res.Error != "" {
			t.Fatalf("chat %d: %+v", i, res)
		}
	}
	if grown := liveHeap() - base; grown > limit+8<<20 {
		t.Errorf("the kept state holds %d MiB over the baseline, the cap is %d MiB", grown>>20, limit>>20)
	}
	if !s.Has("chat4") || !s.Has("chat3") || s.Has("chat0") {
		t.Fatalf("the wrong states were dropped: chat0 %v chat3 %v chat4 %v", s.Has("chat0"), s.Has("chat3"), s.Has("chat4"))
	}
	res := s.Eval(context.Background(), &EvalRequest{Account: "acc", Session: "chat0", Code: "typeof keep"})
	if !res.Evicted || res.Reset || res.Output != "=> undefined\n" {
		t.Errorf("the dropped session's next eval: %+v", res)
	}
	if res := s.Eval(context.Background(), &EvalRequest{Account: "acc", Session: "chat4", Code: "keep.length"}); res.Output != "=> 262144\n" || res.Evicted {
		t.Errorf("the most recent session lost its state: %+v", res)
	}
}
