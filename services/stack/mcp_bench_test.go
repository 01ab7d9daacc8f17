package stack

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/gateway"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/svc"
	"github.com/mirobody/mirobody-go/services/telemetry"
)

// benchClients is the number of concurrent MCP clients (issue 4).
const benchClients = 64

// BenchmarkMCPToolsCall compares tools/call of the same trivial tool
// (read_skill of a one-line SKILL.md: a file read) served by a bare go-sdk
// server and through gateway → NATS → registry-svc, each with 64
// concurrent Go SDK clients. It reports calls/s and p50/p99 latency.
func BenchmarkMCPToolsCall(b *testing.B) {
	skills := b.TempDir()
	must(b, os.MkdirAll(filepath.Join(skills, "bench"), 0o755))
	must(b, os.WriteFile(filepath.Join(skills, "bench", "SKILL.md"), []byte("---\nname: bench\n---\nhello\n"), 0o644))

	bare, bareStateless, stack := bareServer(b, skills, nil), bareServer(b, skills, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}), benchStack(b, skills)
	// Go SDK clients measure what MCP clients see; raw HTTP clients (one
	// keep-alive connection each, plain JSON-RPC POSTs) take most of the
	// client's own CPU out of a 2-core measurement.
	b.Run("sdk-client/bare-go-sdk", func(b *testing.B) { benchCalls(b, bare) })
	b.Run("sdk-client/gateway-nats-registry", func(b *testing.B) { benchCalls(b, stack) })
	b.Run("raw-http/bare-go-sdk-stateless", func(b *testing.B) { benchRaw(b, bareStateless) })
	b.Run("raw-http/gateway-nats-registry", func(b *testing.B) { benchRaw(b, stack) })
}

// bareServer serves read_skill with the go-sdk's own Streamable HTTP
// handler, reading the same file.
func bareServer(b *testing.B, skills string, opts *mcp.StreamableHTTPOptions) string {
	b.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
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
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, opts))
	b.Cleanup(srv.Close)
	return srv.URL
}

// benchStack runs the four services with only the Go built-ins.
func benchStack(b *testing.B, skills string) string {
	b.Helper()
	return benchStackTools(b, skills, []string{"builtin"})
}

// benchStackTools runs the four services with the tools of toolDirs
// (MCP_TOOL_DIRS) and returns the /mcp URL.
func benchStackTools(b *testing.B, skills string, toolDirs []string) string {
	b.Helper()
	natsURL := servicetest.NATS(b)
	db := servicetest.Postgres(b, nil)
	res, err := conf.Load(conf.LoadOptions{Path: "testdata/empty.yaml", LookupEnv: func(string) (string, bool) { return "", false }})
	must(b, err)
	cfg := res.Config
	cfg.NATSURL, cfg.DatabaseURL = natsURL, db.DSN
	cfg.HTTPAddr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.MCPToolDirs, cfg.SkillDirs, cfg.ToolsWatch = toolDirs, []string{skills}, false
	cfg.RateLimitAcct, cfg.RateLimitIP = 0, 0
	cfg.LogLevel = "warn"
	// As `mirobody serve` runs them: logging at the configured level (a
	// test logger at debug would write a line per call, which no
	// deployment pays) and every service recording into one metrics
	// registry (which every deployment pays).
	log, err := telemetry.NewLogger(telemetry.LogOptions{Level: cfg.LogLevel, Format: "text"})
	must(b, err)
	services := Build(cfg, log, telemetry.NewRegistry(), Targets)
	gw := services[len(services)-1].(*gateway.Service)
	g := svc.NewGroup(svc.Options{Log: log, Grace: 10 * time.Second, Services: services})
	must(b, g.Start(context.Background()))
	b.Cleanup(func() { _ = g.Stop(context.Background()) })
	return "http://" + gw.Addr() + "/mcp"
}

// benchCalls runs b.N calls spread over benchClients sessions.
func benchCalls(b *testing.B, url string) {
	ctx := context.Background()
	sessions := make([]*mcp.ClientSession, benchClients)
	for i := range sessions {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		must(b, err)
		b.Cleanup(func() { _ = cs.Close() })
		sessions[i] = cs
	}
	params := &mcp.CallToolParams{Name: "read_skill", Arguments: map[string]any{"name": "bench"}}
	if res, err := sessions[0].CallTool(ctx, params); err != nil || res.IsError {
		b.Fatalf("warm-up call: %v %+v", err, res)
	}
	lat := make([][]time.Duration, benchClients)
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for i, cs := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				res, err := cs.CallTool(ctx, params)
				if err != nil || res.IsError {
					failed.Store(fmt.Sprintf("%v %+v", err, res))
					return
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if f := failed.Load(); f != nil {
		b.Fatalf("call failed: %v", f)
	}
	report(b, elapsed, lat)
}

// report adds throughput and latency percentiles to the benchmark line.
func report(b *testing.B, elapsed time.Duration, lat [][]time.Duration) {
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
}

// benchRaw runs b.N tools/call POSTs (2025-11-25, no session: both servers
// accept that) from benchClients goroutines with their own connection.
func benchRaw(b *testing.B, url string) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_skill","arguments":{"name":"bench"}}}`)
	call := func(hc *http.Client) error {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte("hello")) {
			return fmt.Errorf("status %d: %s %v", resp.StatusCode, out, err)
		}
		return nil
	}
	if err := call(http.DefaultClient); err != nil {
		b.Fatalf("warm-up call: %v", err)
	}
	lat := make([][]time.Duration, benchClients)
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for i := range benchClients {
		hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer hc.CloseIdleConnections()
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if err := call(hc); err != nil {
					failed.Store(err.Error())
					return
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if f := failed.Load(); f != nil {
		b.Fatalf("call failed: %v", f)
	}
	report(b, elapsed, lat)
}
