package registrysvc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/registry"
)

// hostileResultEnv, set to a size in bytes, makes TestHostileServerProcess
// serve.
const hostileResultEnv = "MIROBODY_TEST_HOSTILE_RESULT_BYTES"

// TestHostileServerProcess is not a test of its own: it is the hostile
// external MCP server (the official Go SDK on loopback) that
// startHostileServer runs as a child process, so that its memory does not
// count in the registry's. Its tool big answers a text of the given size,
// small a short one; /sse answers with SSE streams, /json with JSON bodies.
func TestHostileServerProcess(t *testing.T) {
	size, _ := strconv.Atoi(os.Getenv(hostileResultEnv))
	if size <= 0 {
		t.Skip("run as a child process by the tests of hostile external servers")
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "1"}, nil)
	big := strings.Repeat("x", size)
	mcp.AddTool(s, &mcp.Tool{Name: "big"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: big}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "small"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "small"}}}, nil, nil
	})
	get := func(*http.Request) *mcp.Server { return s }
	mux := http.NewServeMux()
	mux.Handle("/sse", mcp.NewStreamableHTTPHandler(get, nil))
	mux.Handle("/json", mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{JSONResponse: true}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = http.Serve(ln, mux) }()
	fmt.Printf("http://%s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin) // serves until the parent goes
}

// startHostileServer runs TestHostileServerProcess in a child process and
// returns its base URL.
func startHostileServer(t *testing.T, resultBytes int) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostileServerProcess$")
	cmd.Env = append(os.Environ(), hostileResultEnv+"="+strconv.Itoa(resultBytes))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://") {
		t.Fatalf("the hostile server did not start: %q %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return strings.TrimSpace(line)
}

// heapWatch samples the heap until stopped and keeps the peak.
type heapWatch struct {
	stop chan struct{}
	done chan struct{}
	// base and peak are in use heap bytes (live and not yet swept
	// objects); baseMapped and peakMapped the memory the runtime holds
	// from the OS (total less released).
	base, peak, baseMapped, peakMapped uint64
}

var heapMetrics = []string{"/memory/classes/heap/objects:bytes", "/memory/classes/total:bytes", "/memory/classes/heap/released:bytes"}

func readHeap() (inUse, mapped uint64) {
	s := make([]metrics.Sample, len(heapMetrics))
	for i, n := range heapMetrics {
		s[i].Name = n
	}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64() - s[2].Value.Uint64()
}

// watchHeap collects garbage, takes the baseline and samples every
// millisecond.
func watchHeap() *heapWatch {
	runtime.GC()
	w := &heapWatch{stop: make(chan struct{}), done: make(chan struct{})}
	w.base, w.baseMapped = readHeap()
	w.peak, w.peakMapped = w.base, w.baseMapped
	go func() {
		defer close(w.done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			inUse, mapped := readHeap()
			w.peak, w.peakMapped = max(w.peak, inUse), max(w.peakMapped, mapped)
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// growth stops the watch and returns the peak growth of the heap in use
// and of the memory held from the OS.
func (w *heapWatch) growth() (inUse, mapped int64) {
	close(w.stop)
	<-w.done
	return int64(w.peak) - int64(w.base), int64(w.peakMapped) - int64(w.baseMapped)
}

const mib = 1 << 20

// TestExternalHugeResults: a server answering 40 MB results, three at
// once, is refused with a clear tool error without being read whole, on
// both answer framings (SSE and JSON); its session survives, another
// account's list is untouched, and registry-svc's heap stays within the
// bound stated in design.md. (Before: read whole, and the SSE framing lost
// the session with no reason given.)
func TestExternalHugeResults(t *testing.T) {
	// 16 MiB, four times the cap, rather than the report's 40 MB: the
	// hostile server is this race-instrumented test binary, which needs
	// tens of seconds to encode three 40 MB answers on a loaded machine,
	// and what is measured (nothing past the cap is kept) is the same.
	const resultBytes = 16 * mib
	const maxBytes = 4 * mib
	// The bound of design.md: 4 times EXTERNAL_MAX_RESULT_BYTES per call
	// in flight plus 16 MiB. (Measured: under 20 MiB; before the cap,
	// 650 to 800 MiB.)
	const bound = 3*4*maxBytes + 16*mib
	base := startHostileServer(t, resultBytes)
	e := start(t, map[string]string{"MCP_CLIENT_ALLOW_PRIVATE": "true", "EXTERNAL_MAX_RESULT_BYTES": strconv.Itoa(maxBytes)})
	ctx := context.Background()
	for _, framing := range []string{"sse", "json"} {
		t.Run(framing, func(t *testing.T) {
			turn := []agent.ServerSpec{{Name: "hostile", URL: base + "/" + framing}}
			call := func(name string) (*registry.CallResponse, error) {
				return e.client.Call(ctx, &registry.CallRequest{Caller: alice, Name: name, Servers: turn, Arguments: json.RawMessage(`{}`)})
			}
			if resp, err := call("hostile__small"); err != nil || text(resp) != "small" {
				t.Fatalf("a small call: %+v %v", resp, err)
			}
			w := watchHeap()
			var wg sync.WaitGroup
			errs := make(chan string, 3)
			for range 3 {
				wg.Go(func() {
					resp, err := call("hostile__big")
					if err != nil || !resp.IsError || !strings.Contains(text(resp), "larger than 4194304 bytes (EXTERNAL_MAX_RESULT_BYTES)") {
						errs <- fmt.Sprintf("a %d MiB result: %v %.300s", resultBytes/mib, err, respText(resp))
					}
				})
			}
			// Meanwhile another account's list, built-ins included, is untouched.
			if names := e.names(t, registry.Caller{AccountID: "acct-bob"}); !slices.Contains(names, "resolve_indicator") {
				t.Errorf("bob's list during the attack: %v", names)
			}
			wg.Wait()
			inUse, mapped := w.growth()
			close(errs)
			for msg := range errs {
				t.Error(msg)
			}
			t.Logf("3 concurrent %d MiB results over %s: peak heap in use +%.1f MiB, memory held from the OS +%.1f MiB (bound %d MiB)",
				resultBytes/mib, framing, float64(inUse)/mib, float64(mapped)/mib, bound/mib)
			if inUse > bound {
				t.Errorf("the heap grew by %d MiB, over the bound of %d MiB", inUse/mib, bound/mib)
			}
			if resp, err := call("hostile__small"); err != nil || text(resp) != "small" {
				t.Errorf("a small call after the refused ones: %+v %v", resp, err)
			}
		})
	}
}

func respText(r *registry.CallResponse) string {
	if r == nil {
		return "<nil>"
	}
	return text(r)
}
