package stack

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"runtime/trace"
	"slices"
	"testing"
	"time"
)

// BenchmarkToolsListC1 lists the 1,000 tools of BenchmarkCompare at c=1
// (full answers, anonymous, 2025-11-25) with the same load client, b.N
// times, and reports the latency percentiles: the tail of issue 20's
// "tools/list p99 ≤ 2 ms", measurable alone (with -trace, gctrace).
func BenchmarkToolsListC1(b *testing.B) {
	skills := b.TempDir()
	toolDir := b.TempDir()
	must(b, os.WriteFile(filepath.Join(toolDir, "bench_tools.py"), []byte(pythonTools(compareTools)), 0o644))
	url := benchStackTools(b, skills, []string{toolDir, "builtin"})
	listBody := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	b.Cleanup(hc.CloseIdleConnections)
	must(b, post(hc, url, listBody, "tool_0999"))
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		// A region per list, so that a trace (-trace) shows each one.
		var err error
		trace.WithRegion(ctx, "list", func() { err = post(hc, url, listBody, "") })
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(lat[len(lat)*999/1000].Microseconds()), "p999-µs")
}
