package registrysvc

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/registry-svc/internal/builtin"
	"github.com/mirobody/mirobody-go/services/registry"
)

// goEcho is a trivial built-in, the baseline for the Python path.
var goEcho = &builtin.Tool{
	Name: "go_echo", Description: "Echo.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
	Call: func(_ context.Context, req *builtin.Request) (any, error) {
		var a struct{ Text string }
		if err := req.Bind(&a); err != nil {
			return nil, err
		}
		return a.Text, nil
	},
}

// reportLatency records each op's duration and reports percentiles.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	at := func(q float64) float64 { return float64(l[int(q*float64(len(l)-1))].Microseconds()) }
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

func benchCall(b *testing.B, tool string) {
	e := start(b, map[string]string{"MCP_TOOL_DIRS": "testdata/calls,builtin", "PYTHON_WORKERS": "2"}, goEcho)
	req := &registry.CallRequest{Caller: alice, Name: tool, Arguments: json.RawMessage(`{"text":"ping"}`)}
	ctx := context.Background()
	lat := make(latencies, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		began := time.Now()
		if _, err := e.client.Call(ctx, req); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(began))
	}
	b.StopTimer()
	lat.report(b)
}

// BenchmarkCallGoBuiltin is the baseline: registry.tools.call of a Go built-in.
func BenchmarkCallGoBuiltin(b *testing.B) { benchCall(b, "go_echo") }

// BenchmarkCallPython is registry.tools.call of a Python tool; the
// difference from BenchmarkCallGoBuiltin is what the tool host adds.
func BenchmarkCallPython(b *testing.B) { benchCall(b, "echo") }

// BenchmarkCallPythonConcurrent measures throughput with 2 host processes
// and 16 concurrent callers per CPU.
func BenchmarkCallPythonConcurrent(b *testing.B) {
	e := start(b, map[string]string{"MCP_TOOL_DIRS": "testdata/calls", "PYTHON_WORKERS": "2"})
	req := &registry.CallRequest{Caller: alice, Name: "echo", Arguments: json.RawMessage(`{"text":"ping"}`)}
	b.SetParallelism(16)
	b.ResetTimer()
	began := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := e.client.Call(context.Background(), req); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "calls/s")
}

// BenchmarkList1000 is registry.tools.list with 1,000 Python tools for one
// authenticated account.
func BenchmarkList1000(b *testing.B) {
	dir := b.TempDir()
	for f := range 10 {
		var src strings.Builder
		for i := range 100 {
			fmt.Fprintf(&src, "def tool_%d_%03d(city: str, days: int = 3, units: str = \"metric\") -> dict:\n"+
				"    \"\"\"Forecast number %d.\n\n    Args:\n        city: The city.\n        days: How many days.\n        units: Units.\n    \"\"\"\n    return {}\n\n\n", f, i, i)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("tools_%d.py", f)), []byte(src.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	e := start(b, map[string]string{"MCP_TOOL_DIRS": dir, "PYTHON_WORKERS": "1"})
	ctx := context.Background()
	req := &registry.ListRequest{Caller: alice}
	resp, err := e.client.List(ctx, req)
	if err != nil || len(resp.Tools) != 1000 {
		b.Fatalf("listing: %d tools, %v", len(resp.Tools), err)
	}
	run := func(b *testing.B, list func() error) {
		lat := make(latencies, 0, b.N)
		for b.Loop() {
			began := time.Now()
			if err := list(); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(began))
		}
		b.StopTimer()
		lat.report(b)
	}
	// Through NATS with the typed client, the way the gateway and agent-svc
	// list: the client revalidates its cached list by ETag.
	b.Run("nats", func(b *testing.B) {
		run(b, func() error { _, err := e.client.List(ctx, req); return err })
	})
	// Through NATS without the client's cache: the server sends the
	// pre-encoded ~350 KB reply, the caller decodes all of it.
	b.Run("nats-full", func(b *testing.B) {
		run(b, func() error {
			_, err := registry.ToolsList.Call(ctx, e.wire, req)
			return err
		})
	})
	// The handler alone, the one NATS serves: snapshot, policy, data
	// gating and the cached encoding.
	b.Run("handler", func(b *testing.B) {
		run(b, func() error { _, err := e.svc.reg.listEncoded(ctx, req); return err })
	})
}

// BenchmarkValidate is the argument check of a registry call (read_skill's
// schema, one argument).
func BenchmarkValidate(b *testing.B) {
	v, err := newValidator("read_skill", builtin.ReadSkill().InputSchema)
	if err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"name":"bench"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.check("read_skill", args); err != nil {
			b.Fatal(err)
		}
	}
}
