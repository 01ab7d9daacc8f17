package stack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mirobody/mirobody-go/services/agent"
)

// chaosKind is one kind of request of the chaos load.
type chaosKind struct {
	name string
	// idempotent kinds are sent to the other gateway when the connection
	// to one breaks mid-request; the others only when the dial fails.
	idempotent bool
	// do makes one request through the gateway at base; an error is a
	// transport error or the request's failure.
	do func(ctx context.Context, c *http.Client, base, key string) error
}

// chaosKinds is the load: MCP tool calls of a read-only and of a tool with
// effects, tool lists, /api reads, data imports and chat turns.
func chaosKinds() []chaosKind {
	return []chaosKind{
		{name: "tools/call read-only", idempotent: true, do: mcpToolCall("chaos_read")},
		{name: "tools/call with effects", do: mcpToolCall("chaos_write")},
		{name: "tools/list", idempotent: true, do: func(ctx context.Context, c *http.Client, base, key string) error {
			var res struct {
				Tools []json.RawMessage `json:"tools"`
			}
			if err := mcpRPC(ctx, c, base, key, "tools/list", map[string]any{}, &res); err != nil {
				return err
			}
			if len(res.Tools) == 0 {
				return errors.New("tools/list: no tools")
			}
			return nil
		}},
		{name: "GET /api/sessions", idempotent: true, do: func(ctx context.Context, c *http.Client, base, key string) error {
			_, err := chaosHTTP(ctx, c, http.MethodGet, base+"/api/sessions", key, "", nil)
			return err
		}},
		// A re-import upserts the same rows, so a repeat is harmless.
		{name: "POST /api/data/health", idempotent: true, do: func(ctx context.Context, c *http.Client, base, key string) error {
			body, err := chaosHTTP(ctx, c, http.MethodPost, base+"/api/data/health", key, "text/csv",
				[]byte("indicator,value,unit,time\nGlucose,5.1,mmol/L,2026-01-01\nPulse,61,bpm,2026-01-01\n"))
			if err == nil && !bytes.Contains(body, []byte(`"committed":true`)) {
				err = fmt.Errorf("import not committed: %s", body)
			}
			return err
		}},
		{name: "chat turn", do: chatTurn},
	}
}

// chaosHTTP makes one request and returns the body of a 200 answer.
func chaosHTTP(ctx context.Context, c *http.Client, method, url, key, contentType string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %s %s", method, url[strings.Index(url, "/api"):], resp.Status, bytes.TrimSpace(b))
	}
	return b, nil
}

// rpcID numbers the load's JSON-RPC requests.
var rpcID atomic.Int64

// mcpRPC makes one sessionless JSON-RPC request to /mcp and decodes its
// result into out.
func mcpRPC(ctx context.Context, c *http.Client, base, key, method string, params, out any) error {
	// Ids are unique, as within a client's session: the gateway names a
	// call for cancellation by the caller's scope and this id.
	in, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": rpcID.Add(1), "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", bytes.NewReader(in))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST /mcp %s: %s %s", method, resp.Status, bytes.TrimSpace(b))
	}
	// An SSE answer carries the message on a data line.
	if i := bytes.Index(b, []byte("data: ")); i >= 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _, _ = bytes.Cut(b[i+len("data: "):], []byte("\n"))
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &msg); err != nil {
		return fmt.Errorf("POST /mcp %s: %v: %s", method, err, b)
	}
	if msg.Error != nil {
		return fmt.Errorf("POST /mcp %s: JSON-RPC error %d: %s", method, msg.Error.Code, msg.Error.Message)
	}
	return json.Unmarshal(msg.Result, out)
}

// mcpToolCall returns the request of one tools/call of tool.
func mcpToolCall(tool string) func(ctx context.Context, c *http.Client, base, key string) error {
	return func(ctx context.Context, c *http.Client, base, key string) error {
		var res struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if err := mcpRPC(ctx, c, base, key, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"ms": 200}}, &res); err != nil {
			return err
		}
		if res.IsError {
			text := ""
			if len(res.Content) > 0 {
				text = res.Content[0].Text
			}
			return fmt.Errorf("tool error: %s", text)
		}
		return nil
	}
}

// chatTurn runs one chat turn of the scripted provider to its end event.
// A stream that broke after its start event (its gateway died) goes on
// where it stopped: the run is durable, so the client follows it with GET
// /api/runs/{id}/stream and Last-Event-ID, through the other gateway.
func chatTurn(ctx context.Context, c *http.Client, base, key string) error {
	prog, _ := ctx.Value(chatKey{}).(*chatProgress)
	if prog == nil {
		prog = &chatProgress{}
	}
	if prog.prev.IsZero() {
		prog.prev = time.Now()
	}
	method, path, body := http.MethodPost, "/api/chat", `{"question":"chaos"}`
	if prog.runID != "" {
		method, path, body = http.MethodGet, "/api/runs/"+prog.runID+"/stream", ""
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	if prog.lastID != "" {
		req.Header.Set("Last-Event-ID", prog.lastID)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s %s: %s %s", method, path, resp.Status, bytes.TrimSpace(b))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	stall, _ := ctx.Value(stallKey{}).(*time.Duration)
	for sc.Scan() {
		if stall != nil {
			*stall = max(*stall, time.Since(prog.prev))
			prog.prev = time.Now()
		}
		if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			prog.lastID = id
			continue
		}
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev agent.Event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return fmt.Errorf("chat event %q: %w", data, err)
		}
		if ev.Type == agent.EventError {
			return fmt.Errorf("chat error event: %s", ev.Message)
		}
		if ev.Type == agent.EventStart {
			prog.runID = ev.ID
		}
		prog.last = ev
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if prog.last.Type != agent.EventEnd || prog.last.FinishReason != agent.FinishStop {
		return fmt.Errorf("chat stream ended with %s %s", prog.last.Type, prog.last.FinishReason)
	}
	return nil
}

// chatProgress is how far a chat turn got, kept in its request's context
// across gateways: its run, the last event id and event it read, and when
// it read its last line.
type chatProgress struct {
	runID, lastID string
	last          agent.Event
	prev          time.Time
}

// chatKey holds a request's *chatProgress in its context.
type chatKey struct{}

// stallKey holds, in a request's context, where a streamed request
// records its longest wait for a line.
type stallKey struct{}

// chaosResult is one request of the load.
type chaosResult struct {
	kind  string
	at    time.Duration // since the load began
	took  time.Duration
	err   error
	phase string
	// failedOver: a broken connection sent the request to the other
	// gateway (an idempotent one again, a chat turn to follow its run).
	failedOver bool
}

// chaosLoad runs workers of every kind against the gateways, as clients
// behind a load balancer: a request whose gateway refuses the connection
// goes to the other one, and an idempotent one (or a chat turn that has
// its run's id) also when its connection breaks mid-request.
type chaosLoad struct {
	gateways []string
	key      string
	// phase names what the run is doing now (the kill in progress).
	phase atomic.Pointer[string]

	began time.Time

	mu      sync.Mutex
	results []chaosResult
	next    atomic.Uint64
}

// run starts workers per kind, each starting a request at most every
// interval (0: back to back), and returns a function that stops them and
// waits for their requests in flight.
func (l *chaosLoad) run(kinds []chaosKind, workers int, interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	l.began = time.Now()
	var wg sync.WaitGroup
	// No keep-alive: every request dials, as through a load balancer that
	// sends each to a live gateway.
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for _, k := range kinds {
		for range workers {
			wg.Go(func() {
				for ctx.Err() == nil {
					next := time.Now().Add(interval)
					l.one(k, c)
					select {
					case <-ctx.Done():
					case <-time.After(time.Until(next)):
					}
				}
			})
		}
	}
	return func() { cancel(); wg.Wait() }
}

// one makes one request of kind k, failing over between gateways, within
// 30 s.
func (l *chaosLoad) one(k chaosKind, c *http.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A stream (a chat turn) reports its longest stall: the longest wait
	// for its next line, which is what a replica's death costs it; its
	// whole length is the turn's, a takeover included.
	var stall time.Duration
	ctx = context.WithValue(ctx, stallKey{}, &stall)
	prog := &chatProgress{}
	ctx = context.WithValue(ctx, chatKey{}, prog)
	phase := *l.phase.Load()
	start := time.Now()
	i := l.next.Add(1)
	var err error
	failedOver := false
	for {
		err = k.do(ctx, c, l.gateways[i%uint64(len(l.gateways))], l.key)
		if err == nil || ctx.Err() != nil {
			break
		}
		// A chat turn that has its run goes on through the other gateway.
		if errors.Is(err, syscall.ECONNREFUSED) {
			i++
			continue
		}
		if (k.idempotent || prog.runID != "") && brokenConn(err) {
			i++
			failedOver = true
			continue
		}
		break
	}
	took := time.Since(start)
	if stall > 0 && err == nil {
		took = stall
	}
	l.mu.Lock()
	l.results = append(l.results, chaosResult{kind: k.name, at: start.Sub(l.began), took: took, err: err, phase: phase, failedOver: failedOver})
	l.mu.Unlock()
}

// brokenConn reports whether err is a connection that broke mid-request.
func brokenConn(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.EPIPE)
}

// chaosCounts is the chaos run's outcome per kind.
type chaosCounts struct {
	kind       string
	idempotent bool
	total      int
	failedOver int
	failed     []chaosResult
	longest    time.Duration
}

// counts sums the results per kind, in the order of kinds.
func (l *chaosLoad) counts(kinds []chaosKind) []chaosCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []chaosCounts
	for _, k := range kinds {
		c := chaosCounts{kind: k.name, idempotent: k.idempotent}
		for _, r := range l.results {
			if r.kind != k.name {
				continue
			}
			c.total++
			if r.failedOver {
				c.failedOver++
			}
			c.longest = max(c.longest, r.took)
			if r.err != nil {
				c.failed = append(c.failed, r)
			}
		}
		out = append(out, c)
	}
	return out
}

// chaosReport prints the counts: per kind the calls, failures and longest
// request, then every failure with its time to failure and error.
func chaosReport(counts []chaosCounts) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-26s %6s %6s %9s %11s\n", "kind", "calls", "failed", "longest", "failed over")
	for _, c := range counts {
		fmt.Fprintf(&b, "%-26s %6d %6d %9s %11d\n", c.kind, c.total, len(c.failed), c.longest.Round(time.Millisecond), c.failedOver)
	}
	for _, c := range counts {
		fails := slices.Clone(c.failed)
		slices.SortFunc(fails, func(a, b chaosResult) int { return int(b.took - a.took) })
		for _, f := range fails {
			fmt.Fprintf(&b, "failed %s at %s (%s) after %s: %v\n", c.kind, f.at.Round(time.Millisecond), f.phase, f.took.Round(time.Millisecond), f.err)
		}
	}
	return b.String()
}
