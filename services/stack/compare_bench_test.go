package stack

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/services/servicetest"
)

// compareTools is the size of the tools/list compared (issue 20).
const compareTools = 1000

// compareRound is how long each target is loaded per round; the rounds
// interleave the targets, so that the machine's noise hits them alike.
const compareRound = 1500 * time.Millisecond

// compareRounds is the number of interleaved rounds; each number printed
// is the median over them.
const compareRounds = 3

// BenchmarkCompare is `make bench-compare`: the side-by-side comparison of
// issue 20, printed as a table. The same Go load client (raw JSON-RPC
// POSTs, one keep-alive connection per concurrent client) calls the same
// tool (read_skill of a one-line SKILL.md) on a bare official go-sdk
// server and through gateway → NATS → registry-svc, at c=1, 8 and 32, and
// on FastMCP when the fastmcp Python package is installed. It also lists
// 1,000 tools on each, and compares a Python tool with the Go built-in.
// Run it once (-benchtime 1x); bench/README.md explains the method.
func BenchmarkCompare(b *testing.B) {
	skills := b.TempDir()
	must(b, os.MkdirAll(filepath.Join(skills, "bench"), 0o755))
	must(b, os.WriteFile(filepath.Join(skills, "bench", "SKILL.md"), []byte("---\nname: bench\n---\nhello\n"), 0o644))
	toolDir := b.TempDir()
	must(b, os.WriteFile(filepath.Join(toolDir, "bench_tools.py"), []byte(pythonTools(compareTools)), 0o644))

	// The calls go to a bare server with read_skill alone, as a small
	// go-sdk server would be; the list goes to one with the 1,000 tools.
	stackURL := benchStackTools(b, skills, []string{toolDir, "builtin"})
	targets := []target{
		{name: "go-sdk", url: bareListServer(b, skills, 0), listURL: bareListServer(b, skills, compareTools)},
		{name: "mirobody", url: stackURL, listURL: stackURL},
	}
	if url, why := fastMCPServer(b, skills); url != "" {
		targets = append(targets, target{name: "fastmcp", url: url, listURL: url})
	} else {
		fmt.Printf("FastMCP: skipped (%s)\n", why)
	}
	callBody := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_skill","arguments":{"name":"bench"}}}`
	pyBody := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bench_echo","arguments":{"text":"hello"}}}`
	listBody := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for _, t := range targets {
		must(b, post(http.DefaultClient, t.url, callBody, "hello"))
		must(b, post(http.DefaultClient, t.listURL, listBody, "tool_0999"))
	}
	must(b, post(http.DefaultClient, targets[1].url, pyBody, "hello"))

	type key struct {
		target, what string
		c            int
	}
	runs := map[key][]loadResult{}
	b.ResetTimer()
	for range compareRounds {
		for _, c := range []int{1, 8, 32} {
			for _, t := range targets {
				k := key{t.name, "call", c}
				runs[k] = append(runs[k], load(b, t.url, callBody, c))
			}
		}
		for _, t := range targets {
			k := key{t.name, "list", 1}
			runs[k] = append(runs[k], load(b, t.listURL, listBody, 1))
		}
		k := key{"mirobody", "python", 1}
		runs[k] = append(runs[k], load(b, targets[1].url, pyBody, 1))
	}
	b.StopTimer()

	med := func(k key) loadResult { return median(runs[k]) }
	fmt.Printf("\ntools/call of read_skill, %d interleaved rounds of %s, medians\n", compareRounds, compareRound)
	fmt.Printf("(ratio = mirobody's throughput ÷ the other's; p50 ratio = the other's p50 ÷ mirobody's; above 1: mirobody is faster)\n")
	fmt.Printf("%-4s %-10s %10s %12s %12s %8s %9s\n", "c", "server", "calls/s", "p50", "p99", "ratio", "p50 ratio")
	for _, c := range []int{1, 8, 32} {
		ours := med(key{"mirobody", "call", c})
		for _, t := range targets {
			r := med(key{t.name, "call", c})
			fmt.Printf("%-4d %-10s %10.0f %12s %12s %7.2fx %8.2fx\n", c, t.name, r.rate, r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond),
				ours.rate/r.rate, float64(r.p50)/float64(ours.p50))
		}
	}
	fmt.Printf("\ntools/list of %d tools at c=1, full answers (no If-None-Match)\n", compareTools)
	fmt.Printf("%-10s %10s %10s %12s\n", "server", "p50", "p99", "lists/s")
	for _, t := range targets {
		r := med(key{t.name, "list", 1})
		fmt.Printf("%-10s %10s %10s %12.0f\n", t.name, r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.rate)
	}
	goCall, py := med(key{"mirobody", "call", 1}), med(key{"mirobody", "python", 1})
	fmt.Printf("\nPython tool over the Go built-in, through mirobody at c=1: %+v p50 (%s vs %s)\n",
		(py.p50 - goCall.p50).Round(time.Microsecond), py.p50.Round(time.Microsecond), goCall.p50.Round(time.Microsecond))
	b.ReportMetric(ratio(med(key{"mirobody", "call", 1}), med(key{"go-sdk", "call", 1})), "c1-ratio")
	b.ReportMetric(float64(med(key{"mirobody", "list", 1}).p99.Microseconds()), "list-p99-µs")
}

// target is one server under comparison: url serves the calls, listURL
// the list of compareTools tools.
type target struct{ name, url, listURL string }

// loadResult is one round against one target.
type loadResult struct {
	rate     float64
	p50, p99 time.Duration
}

func ratio(a, b loadResult) float64 { return a.rate / b.rate }

// median returns the round with the median throughput, and the median
// latencies.
func median(rs []loadResult) loadResult {
	pick := func(f func(loadResult) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return loadResult{
		rate: pick(func(r loadResult) float64 { return r.rate }),
		p50:  time.Duration(pick(func(r loadResult) float64 { return float64(r.p50) })),
		p99:  time.Duration(pick(func(r loadResult) float64 { return float64(r.p99) })),
	}
}

// load posts body from c clients, each with its own connection, for
// compareRound, and returns the throughput and latency percentiles.
func load(b *testing.B, url, body string, c int) loadResult {
	lat := make([][]time.Duration, c)
	var failed atomic.Value
	var wg sync.WaitGroup
	stop := time.Now().Add(compareRound)
	start := time.Now()
	for i := range c {
		hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
		wg.Go(func() {
			defer hc.CloseIdleConnections()
			for time.Now().Before(stop) {
				t0 := time.Now()
				if err := post(hc, url, body, ""); err != nil {
					failed.Store(err.Error())
					return
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if f := failed.Load(); f != nil {
		b.Fatalf("%s: %v", url, f)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	return loadResult{rate: float64(len(all)) / elapsed.Seconds(), p50: all[len(all)/2], p99: all[len(all)*99/100]}
}

// post sends one JSON-RPC POST (2025-11-25, no session: every server
// compared accepts that) and checks the answer holds want.
func post(hc *http.Client, url, body, want string) error {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	buf := answers.Get().(*bytes.Buffer)
	defer answers.Put(buf)
	buf.Reset()
	_, err = buf.ReadFrom(resp.Body)
	out := buf.Bytes()
	if err != nil || resp.StatusCode != http.StatusOK || bytes.Contains(out, []byte(`"error"`)) || !bytes.Contains(out, []byte(want)) {
		return fmt.Errorf("status %d: %.300s %v", resp.StatusCode, out, err)
	}
	return nil
}

// answers holds the load client's read buffers. The client shares the
// servers' process and heap: reading each answer into a new slice
// (io.ReadAll, hundreds of KB per list of 1,000 tools) made the collector
// run every few dozen lists and put the client's garbage in the servers'
// tail, which a client in its own process would not.
var answers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// pythonTools is a tool file with n trivial tools (tool_0000 …) and
// bench_echo, the Python tool compared with the Go built-in.
func pythonTools(n int) string {
	var sb strings.Builder
	sb.WriteString("def bench_echo(text: str) -> str:\n    \"\"\"Return text unchanged.\"\"\"\n    return text\n\n")
	for i := range n {
		fmt.Fprintf(&sb, "\ndef tool_%04d(city: str, days: int = 3) -> str:\n    \"\"\"Forecast number %d for a city.\n\n    Args:\n        city: The city.\n        days: How many days.\n    \"\"\"\n    return city\n\n", i, i)
	}
	return sb.String()
}

// bareListServer is bareServer (stateless, JSON replies, as the load
// client expects) with n more tools of the same shape as pythonTools'.
// It serves every tool in one page.
func bareListServer(b *testing.B, skills string, n int) string {
	b.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, &mcp.ServerOptions{PageSize: n + 1})
	type args struct {
		Name string `json:"name"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "read_skill", Description: "reads a skill"}, func(_ context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
		text, err := os.ReadFile(filepath.Join(skills, a.Name, "SKILL.md"))
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}}, nil, nil
	})
	type forecast struct {
		City string `json:"city" jsonschema:"The city."`
		Days int    `json:"days,omitempty" jsonschema:"How many days."`
	}
	for i := range n {
		mcp.AddTool(s, &mcp.Tool{Name: fmt.Sprintf("tool_%04d", i), Description: fmt.Sprintf("Forecast number %d for a city.", i)},
			func(_ context.Context, _ *mcp.CallToolRequest, a forecast) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.City}}}, nil, nil
			})
	}
	srv := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})}
	return serve(b, srv)
}

// serve runs srv on a free loopback port until the benchmark ends.
func serve(b *testing.B, srv *http.Server) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(b, err)
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}

// fastMCPServer starts FastMCP serving read_skill and the same list over
// stateless JSON Streamable HTTP, when the fastmcp package is installed.
// It returns "" and why not otherwise.
func fastMCPServer(b *testing.B, skills string) (url, why string) {
	b.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		return "", "no python3"
	}
	if out, err := exec.Command(py, "-c", "import fastmcp").CombinedOutput(); err != nil {
		return "", "the fastmcp Python package is not installed, and PyPI is not reachable here: " + string(lastLine(out))
	}
	port := servicetest.FreePort(b)
	script := filepath.Join(b.TempDir(), "fastmcp_bench.py")
	src := fmt.Sprintf(`import os
from fastmcp import FastMCP
mcp = FastMCP("bare")
@mcp.tool
def read_skill(name: str) -> str:
    """reads a skill"""
    with open(os.path.join(%q, name, "SKILL.md")) as f:
        return f.read()
%s
mcp.run(transport="http", host="127.0.0.1", port=%s, stateless_http=True, json_response=True, show_banner=False)
`, skills, strings.ReplaceAll(pythonTools(compareTools), "\ndef tool_", "\n@mcp.tool\ndef tool_"), port)
	must(b, os.WriteFile(script, []byte(src), 0o644))
	cmd := exec.Command(py, script)
	stderr, err := cmd.StderrPipe()
	must(b, err)
	must(b, cmd.Start())
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Uvicorn says when it listens.
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.OnceFunc(func() { close(ready) })
		for sc.Scan() {
			if strings.Contains(sc.Text(), "running on") || strings.Contains(sc.Text(), "startup complete") {
				once()
			}
		}
	}()
	select {
	case <-ready:
		return "http://127.0.0.1:" + port + "/mcp", ""
	case <-time.After(30 * time.Second):
		return "", "FastMCP did not start within 30s"
	}
}
