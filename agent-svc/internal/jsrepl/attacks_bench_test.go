package jsrepl

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/servicetest"
)

// BenchmarkAttacks runs the js_eval attacks of issue 15 against the
// default budgets (256 MiB, 10 s, 512 MiB of kept state) and reports, per
// attack: how long it ran (attack-s), how long another account's trivial
// eval started meanwhile took (other-ms), and the process's peak RSS over
// its RSS before the attack (peak-MiB, from VmHWM after resetting it).
// Run it alone: go test -run '^$' -bench Attacks -benchtime 1x.
func BenchmarkAttacks(b *testing.B) {
	const budget = 256 << 20
	// A chat keeps about 110 MB of REPL state (built natively: a loop
	// would spend the time budget on a loaded machine).
	const chat = `globalThis.keep = new Float64Array(14e6).fill(1); keep.length`
	cases := []struct {
		name  string
		setup []string
		code  string
	}{
		{name: "catastrophic regex", code: `tools.started(); /^(a|aa)+\1$/.test("a".repeat(40) + "b")`},
		{name: "infinite loop", code: `tools.started(); while (true) {}`},
		{name: "concat", code: `tools.started(); [].concat(...Array(60).fill(new Array(1e6).fill(1)))`},
		{name: "array growth", code: `tools.started(); const a = []; for (;;) a.push({x: a.length})`},
		{name: "string doubling", code: `tools.started(); let s = "x"; for (;;) s += s`},
		// Five chats keep about 110 MB each; the sixth eval is the attack.
		{name: "kept state", setup: []string{chat, chat, chat, chat, chat}, code: `tools.started(); keep.length`},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				s := NewStore(Options{Timeout: 10 * time.Second, MaxMemory: budget, MaxStateBytes: 2 * budget, MaxConcurrent: 2, Log: servicetest.Logger(b)})
				debug.FreeOSMemory()
				base := rss(b, "VmRSS")
				resetPeak(b)
				for i, code := range tc.setup {
					if res := s.Eval(context.Background(), &EvalRequest{Account: "evil", Session: fmt.Sprint("evil/", i), Code: code}); res.Error != "" {
						b.Fatalf("setup %d: %s", i, res.Error)
					}
				}
				started := make(chan struct{})
				var wg sync.WaitGroup
				var res EvalResult
				var took time.Duration
				wg.Go(func() {
					start := time.Now()
					res = s.Eval(context.Background(), &EvalRequest{Account: "evil", Session: "evil/4", Code: tc.code, Tools: []string{"started"}, Call: signal(started)})
					took = time.Since(start)
				})
				<-started
				start := time.Now()
				other := s.Eval(context.Background(), &EvalRequest{Account: "good", Session: "good/1", Code: "1 + 1"})
				otherTook := time.Since(start)
				wg.Wait()
				peak := rss(b, "VmHWM")
				if other.Output != "=> 2\n" {
					b.Fatalf("the other account's eval: %+v", other)
				}
				b.Logf("%s: %s", tc.name, firstLine(res.Error+res.Output))
				b.ReportMetric(took.Seconds(), "attack-s")
				b.ReportMetric(float64(otherTook.Milliseconds()), "other-ms")
				b.ReportMetric(float64(peak-base)/(1<<20), "peak-MiB")
			}
		})
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// rss reads a size field of /proc/self/status, in bytes.
func rss(b *testing.B, field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status:", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// resetPeak sets VmHWM back to the current RSS.
func resetPeak(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skip("cannot reset the peak RSS:", err)
	}
}
