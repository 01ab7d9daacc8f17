package pyhost

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/servicetest"
)

// TestPlainCallsConcurrent: a plain function's call runs on the reader
// thread that read it, which first hands the reading to another thread
// (design.md "Python tool host"), so calls of one host still run side by
// side, past MAX_SYNC_CALLS (64) too, where the pool takes them.
func TestPlainCallsConcurrent(t *testing.T) {
	p, _, _ := startPool(t, Options{Workers: 1}, "../../testdata/concurrent")
	for _, n := range []int{2, 8, 70} {
		t.Run(fmt.Sprintf("%d at once", n), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					out, err := call(t, p, ctx, "gather", fmt.Sprintf(`{"n": %d}`, n))
					if err != nil || !strings.Contains(out, fmt.Sprintf("met %d", n)) {
						t.Errorf("gather: %s %v", out, err)
					}
				})
			}
			wg.Wait()
		})
	}
}

// TestRunningPlainCallBlocksNothing: while a plain function runs on the
// thread that read its call, the host still reads: other calls are
// answered, and the running call's cancel is handled (the host counts its
// thread as abandoned) while it still runs.
func TestRunningPlainCallBlocksNothing(t *testing.T) {
	p, _, lb := startPool(t, Options{Workers: 1}, "../../testdata/calls")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	slow, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := call(t, p, slow, "sleep_sync", `{"seconds": 60}`)
		done <- err
	}()
	// sleep_sync prints before it sleeps.
	servicetest.Eventually(t, 10*time.Second, func() bool { return strings.Contains(lb.String(), "sleeping 60") }, "slow call running")
	for i := range 3 {
		want := fmt.Sprintf("n%d", i)
		if out, err := call(t, p, ctx, "echo", fmt.Sprintf(`{"text": %q}`, want)); err != nil || !strings.Contains(out, want) {
			t.Fatalf("echo beside the slow call: %s %v", out, err)
		}
	}
	w, err := p.pick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	abandoned := func() int {
		r, err := w.request(ctx, &message{Op: "ping"}, false, callHooks{})
		if err != nil {
			t.Fatalf("ping: %v", err)
		}
		return r.Abandoned
	}
	if n := abandoned(); n != 0 {
		t.Fatalf("%d abandoned threads before the cancel", n)
	}
	stop()
	if err := <-done; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	servicetest.Eventually(t, 10*time.Second, func() bool { return abandoned() == 1 }, "the host handled the cancel while the tool runs")
}
