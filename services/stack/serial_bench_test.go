package stack

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkToolsCallSerial is one client calling read_skill over and over
// (c=1, one keep-alive connection, 2025-11-25 without a session), on a bare
// stateless go-sdk server and through gateway → NATS → registry-svc, and
// the Python tool bench_echo through the same stack (BenchmarkCompare's
// Python row, with the same tool file): the
// latency of a single call, which BenchmarkCompare's c=1 rows measure, in a
// form that go test's -cpuprofile, -trace and -benchmem can take apart.
func BenchmarkToolsCallSerial(b *testing.B) {
	skills := b.TempDir()
	must(b, os.MkdirAll(filepath.Join(skills, "bench"), 0o755))
	must(b, os.WriteFile(filepath.Join(skills, "bench", "SKILL.md"), []byte("---\nname: bench\n---\nhello\n"), 0o644))
	toolDir := b.TempDir()
	must(b, os.WriteFile(filepath.Join(toolDir, "bench_tools.py"), []byte(pythonTools(compareTools)), 0o644))
	goBody := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_skill","arguments":{"name":"bench"}}}`
	pyBody := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bench_echo","arguments":{"text":"hello"}}}`
	stackURL := benchStackTools(b, skills, []string{toolDir, "builtin"})
	for _, t := range []struct{ name, url, body string }{
		{"go-sdk", bareServer(b, skills, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}), goBody},
		{"mirobody", stackURL, goBody},
		{"mirobody-python", stackURL, pyBody},
	} {
		b.Run(t.name, func(b *testing.B) {
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			b.Cleanup(hc.CloseIdleConnections)
			must(b, post(hc, t.url, t.body, "hello"))
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			cpu0 := processCPU(b)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if err := post(hc, t.url, t.body, "hello"); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			// CPU time moves less than wall time on a shared machine; it
			// counts this process only (client and server alike), not
			// PostgreSQL's.
			b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		})
	}
}

// processCPU is the user and system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	must(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
