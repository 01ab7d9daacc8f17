package jsrepl

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dop251/goja"

	"github.com/mirobody/mirobody-go/services/servicetest"
)

// The attacks of issue 15 on js_eval, each started by an account "evil".
// Their code calls tools.started() first, without awaiting it: the call
// reaches the test while the attack keeps its slot and goes on. Those
// that meet the memory budget get a long time budget: building the 1e6
// array of the concat takes seconds under the race detector.
var attacks = []struct {
	name, code, err string
}{
	{"catastrophic regex test", `tools.started(); /^(a|aa)+\1$/.test("a".repeat(40) + "b")`, "time budget"},
	{"catastrophic regex exec", `tools.started(); /^(a|aa)+\1$/.exec("a".repeat(40) + "b")`, "time budget"},
	{"catastrophic regex through String", `tools.started(); "a".repeat(40).concat("b").replace(/^(a|aa)+\1$/, "x")`, "time budget"},
	{"catastrophic regex started late", `tools.started(); const t = Date.now(); while (Date.now() - t < 700); /^(a|aa)+\1$/.test("a".repeat(40) + "b")`, "time budget"},
	{"infinite loop", `tools.started(); while (true) {}`, "time budget"},
	{"concat", `tools.started(); [].concat(...Array(60).fill(new Array(1e6).fill(1)))`, "memory budget"},
	{"spread of a sparse array", `tools.started(); [...Array(1e8)]`, "memory budget"},
	{"spread into arguments", `tools.started(); Math.max(...Array(1e8))`, "memory budget"},
}

// signal is a tools callback whose started() closes ch once.
func signal(ch chan struct{}) CallFunc {
	var once sync.Once
	return func(context.Context, string, json.RawMessage) (string, error) {
		once.Do(func() { close(ch) })
		return "null", nil
	}
}

func attackStore(t *testing.T, budget time.Duration) *Store {
	t.Helper()
	return NewStore(Options{Timeout: budget, MaxMemory: testBudget, MaxConcurrent: 2, MaxEvalsPerAccount: 1, Log: servicetest.Logger(t)})
}

// Each attack ends within its time budget plus 1 s with a clear error,
// and another account's trivial eval started while it runs, behind three
// more evals of the attacker queued, completes in under 1 s.
func TestAttacksEndAndSpareOthers(t *testing.T) {
	for _, tc := range attacks {
		t.Run(tc.name, func(t *testing.T) {
			budget := 2 * time.Second
			if tc.err == "memory budget" {
				budget = 20 * time.Second
			}
			s := attackStore(t, budget)
			started := make(chan struct{})
			var wg sync.WaitGroup
			var res EvalResult
			var took time.Duration
			wg.Go(func() {
				start := time.Now()
				res = s.Eval(context.Background(), &EvalRequest{Account: "evil", Session: "evil/1", Code: tc.code, Tools: []string{"started"}, Call: signal(started)})
				took = time.Since(start)
			})
			<-started
			// The attacker queues more evals of other sessions: they wait
			// for its slot, not for the other account's.
			// The other account's runtime exists already: creating one
			// takes a while under the race detector, and is not what is
			// measured.
			if res := s.Eval(context.Background(), &EvalRequest{Account: "good", Session: "good/1", Code: "0"}); res.Error != "" {
				t.Fatal(res.Error)
			}
			queued, stopQueued := context.WithCancel(context.Background())
			for i := range 3 {
				wg.Go(func() {
					s.Eval(queued, &EvalRequest{Account: "evil", Session: "evil/q" + string(rune('a'+i)), Code: `while (true) {}`})
				})
			}
			start := time.Now()
			other := s.Eval(context.Background(), &EvalRequest{Account: "good", Session: "good/1", Code: "1 + 1"})
			otherTook := time.Since(start)
			stopQueued()
			wg.Wait()
			t.Logf("attack ended after %v: %s; the other account's eval took %v", took.Round(time.Millisecond), res.Error, otherTook.Round(time.Millisecond))
			if !strings.Contains(res.Error, tc.err) {
				t.Errorf("attack error %q, output %q; want %q", res.Error, res.Output, tc.err)
			}
			if took > budget+time.Second {
				t.Errorf("attack ran %v against a budget of %v", took, budget)
			}
			if other.Error != "" || other.Output != "=> 2\n" {
				t.Errorf("the other account's eval: %+v", other)
			}
			if otherTook > time.Second {
				t.Errorf("the other account's eval took %v while the attack ran", otherTook)
			}
		})
	}
}

// Three concurrent infinite loops of one account leave a slot to another
// account (by default an account holds at most half of them), whose eval
// completes in under 1 s.
func TestConcurrentLoopsSpareOthers(t *testing.T) {
	s := NewStore(Options{Timeout: time.Second, MaxConcurrent: 2, Log: servicetest.Logger(t)})
	// As in TestAttacksEndAndSpareOthers, the other runtime exists already.
	if res := s.Eval(context.Background(), &EvalRequest{Account: "good", Session: "good/1", Code: "0"}); res.Error != "" {
		t.Fatal(res.Error)
	}
	var wg sync.WaitGroup
	for i := range 3 {
		started := make(chan struct{})
		wg.Go(func() {
			s.Eval(context.Background(), &EvalRequest{Account: "evil", Session: "evil/" + string(rune('a'+i)), Code: `tools.started(); while (true) {}`,
				Tools: []string{"started"}, Call: signal(started)})
		})
		if i == 0 {
			<-started // the others wait for the account's slot
		}
	}
	start := time.Now()
	res := s.Eval(context.Background(), &EvalRequest{Account: "good", Session: "good/1", Code: "1 + 1"})
	took := time.Since(start)
	wg.Wait()
	if res.Output != "=> 2\n" || took > time.Second {
		t.Fatalf("the other account's eval took %v: %+v", took, res)
	}
}

// The scheduler grants slots to waiting accounts in turn, each account's
// evals in arrival order, and never more than perAccount to one account.
func TestSchedulerFairness(t *testing.T) {
	cases := []struct {
		name              string
		slots, perAccount int
		arrivals          []string
		want              []string
	}{
		{"round robin", 1, 1, []string{"a", "a", "a", "b", "c"}, []string{"a", "b", "c", "a", "a"}},
		{"a late account is next", 1, 1, []string{"a", "a", "a", "a", "b"}, []string{"a", "b", "a", "a", "a"}},
		{"per-account cap", 2, 1, []string{"a", "a", "a", "b"}, []string{"a", "b", "a", "a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newScheduler(tc.slots, tc.perAccount)
			type pending struct {
				account string
				w       *waiter
			}
			var waiting []pending
			var holders, got []string
			// collect moves the waiters granted a slot to the holders.
			collect := func() {
				s.mu.Lock()
				defer s.mu.Unlock()
				for i := 0; i < len(waiting); {
					if !waiting[i].w.granted {
						i++
						continue
					}
					holders = append(holders, waiting[i].account)
					got = append(got, waiting[i].account)
					waiting = append(waiting[:i], waiting[i+1:]...)
				}
			}
			// Queued as acquire does, without blocking, so that the
			// arrival order is the table's.
			for _, a := range tc.arrivals {
				w := &waiter{ready: make(chan struct{})}
				s.mu.Lock()
				if len(s.queues[a]) == 0 {
					s.ring = append(s.ring, a)
				}
				s.queues[a] = append(s.queues[a], w)
				s.dispatch()
				s.mu.Unlock()
				waiting = append(waiting, pending{a, w})
				collect()
			}
			for len(waiting) > 0 {
				if len(holders) == 0 {
					t.Fatalf("waiters left and no holder: granted %v", got)
				}
				s.release(holders[0])
				holders = holders[1:]
				collect()
			}
			if strings.Join(got, "") != strings.Join(tc.want, "") {
				t.Errorf("granted %v, want %v", got, tc.want)
			}
		})
	}
	// A waiter that gives up leaves the queue, and a slot granted as it
	// gives up is handed on.
	s := newScheduler(1, 1)
	_ = s.acquire(context.Background(), "a")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.acquire(ctx, "b"); err == nil {
		t.Fatal("a cancelled acquire succeeded")
	}
	s.release("a")
	if err := s.acquire(context.Background(), "c"); err != nil || s.free != 0 || len(s.ring) != 0 {
		t.Fatalf("the scheduler leaked: %v free %d ring %v", err, s.free, s.ring)
	}
}

// setMatchTimeout reaches regexp2 through goja's unexported fields; a goja
// upgrade that moves them fails here rather than silently.
func TestRegexTimeoutReachesEngine(t *testing.T) {
	rt := goja.New()
	for code, want := range map[string]bool{`/^(a|aa)+\1$/`: true, `/(?<=a)b/`: true, `/^a+$/`: false, `({})`: false} {
		v, err := rt.RunString(code)
		if err != nil {
			t.Fatal(err)
		}
		if got := setMatchTimeout(v.(*goja.Object), time.Second); got != want {
			t.Errorf("setMatchTimeout(%s) = %v, want %v", code, got, want)
		}
	}
}

// A long CPU-bound eval of one account beside another's that grows until
// its budget stops it is not charged for that growth: the heap's growth is
// split by the page faults of the evals' threads.
func TestMemoryHogSparesBusyNeighbour(t *testing.T) {
	s := NewStore(Options{Timeout: 60 * time.Second, MaxMemory: testBudget, MaxConcurrent: 2, Log: servicetest.Logger(t)})
	started := make(chan struct{})
	var wg sync.WaitGroup
	var busy EvalResult
	var busyEnd time.Time
	wg.Go(func() {
		// Busy for longer than the hog takes to meet its budget.
		busy = s.Eval(context.Background(), &EvalRequest{Account: "good", Session: "good/1", Tools: []string{"started"}, Call: signal(started),
			Code: `tools.started(); const end = Date.now() + 12000; let t = 0; while (Date.now() < end) t++; t > 0`})
		busyEnd = time.Now()
	})
	<-started
	hog := s.Eval(context.Background(), &EvalRequest{Account: "evil", Session: "evil/1", Code: `globalThis.keep = []; for (;;) keep.push({x: Math.random()})`})
	hogEnd := time.Now()
	wg.Wait()
	if !strings.Contains(hog.Error, "memory budget") {
		t.Fatalf("the hog was not stopped: %+v", hog)
	}
	if hogEnd.After(busyEnd) {
		t.Fatalf("the hog outlasted its neighbour (%v): the test proves nothing", hogEnd.Sub(busyEnd))
	}
	if busy.Error != "" || busy.Output != "=> true\n" {
		t.Fatalf("the busy neighbour was charged: %+v", busy)
	}
}
