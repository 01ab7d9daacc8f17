package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/gateway"
	"github.com/mirobody/mirobody-go/services/servicetest"
)

// askLog is a log record as the clients report it.
type askLog struct {
	Level  string
	Logger string
	Data   any
}

// checkAsk checks what a client saw of favourite_colour: the question, the
// answer in the result, and the tool's two log records at info and above.
func checkAsk(t *testing.T, client, asked, text string, logs []askLog) {
	t.Helper()
	if asked != "What is your favourite colour?" || text != "favourite colour: green" {
		t.Errorf("%s: asked %q, result %q", client, asked, text)
	}
	want := []string{`info favourite_colour "asking `, `notice  {"data":{"action":"accept"},"message":"answered"}`}
	if len(logs) != len(want) {
		t.Fatalf("%s: logs %+v, want %d", client, logs, len(want))
	}
	for i, l := range logs {
		data, _ := json.Marshal(l.Data)
		if got := fmt.Sprintf("%s %s %s", l.Level, l.Logger, data); !strings.HasPrefix(got, want[i]) {
			t.Errorf("%s: log %d = %s, want %s…", client, i, got, want[i])
		}
	}
}

// TestMCPClientsAsk runs the official clients against a Python tool that
// elicits and logs: each answers the question and receives the records.
func TestMCPClientsAsk(t *testing.T) {
	st := startMCPStack(t)

	// The go-sdk speaks 2026-07-28 to /mcp unless told otherwise: there the
	// level is per request and the question an input-required result the
	// client answers by calling again; 2025-11-25 has logging/setLevel
	// and the question on the call's stream.
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("go-sdk "+version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// The SDK may run notification handlers after CallTool returns:
			// records arrive on a channel and are awaited.
			var (
				mu      sync.Mutex
				asked   string
				records = make(chan askLog, 16)
			)
			c := mcp.NewClient(&mcp.Implementation{Name: "stack-ask", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					asked = req.Params.Message
					mu.Unlock()
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"colour": "green"}}, nil
				},
				LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
					records <- askLog{Level: string(req.Params.Level), Logger: req.Params.Logger, Data: req.Params.Data}
				},
			})
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: st.URL, HTTPClient: &http.Client{Transport: bearer{st.Key}}},
				&mcp.ClientSessionOptions{ProtocolVersion: version})
			must(t, err)
			defer cs.Close()
			params := &mcp.CallToolParams{Name: "favourite_colour", Arguments: map[string]any{}}
			if version == "" {
				params.Meta = mcp.Meta{mcp.MetaKeyLogLevel: "info"}
			} else {
				must(t, cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}))
			}
			res, err := cs.CallTool(ctx, params)
			must(t, err)
			text := ""
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				text = tc.Text
			}
			var logs []askLog
			for len(logs) < 2 {
				select {
				case l := <-records:
					logs = append(logs, l)
				case <-ctx.Done():
					t.Fatalf("log records %+v, then %v", logs, ctx.Err())
				}
			}
			select {
			case l := <-records:
				logs = append(logs, l) // one too many: checkAsk reports it
			default:
			}
			mu.Lock()
			defer mu.Unlock()
			checkAsk(t, "go-sdk "+version, asked, text, logs)
		})
	}

	t.Run("typescript-sdk", func(t *testing.T) {
		node, dir := nodeTools(t)
		script := filepath.Join(dir, "ts-ask.mjs")
		src, err := os.ReadFile("testdata/ts-ask.mjs")
		must(t, err)
		must(t, os.WriteFile(script, src, 0o644))
		out := runNode(t, dir, node, 0, script, st.URL, st.Key)
		var got struct {
			Text, Asked string
			Logs        []askLog
		}
		if err := json.Unmarshal(lastLine(out), &got); err != nil {
			t.Fatalf("ts client output %s: %v", out, err)
		}
		checkAsk(t, "typescript-sdk", got.Asked, got.Text, got.Logs)
	})
}

// replicaRouter sends the client's JSON-RPC responses (its answers to the
// server's requests) to one gateway replica and everything else to another.
type replicaRouter struct {
	key           string
	answers, rest string // host:port of each replica
	routed        *atomic.Int32
}

func (rr replicaRouter) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+rr.key)
	req.URL.Host = rr.rest
	if req.Body != nil && req.Method == http.MethodPost {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		var msg struct {
			Method *string         `json:"method"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Method == nil && msg.Result != nil {
			req.URL.Host = rr.answers
			rr.routed.Add(1)
		}
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	}
	req.Host = req.URL.Host
	return http.DefaultTransport.RoundTrip(req)
}

// TestMCPAskAcrossReplicas answers a legacy tool call's question through
// another gateway replica than the one holding the call's stream: the
// answer travels between them over NATS.
func TestMCPAskAcrossReplicas(t *testing.T) {
	st := startMCPStack(t)
	other := gateway.New(gateway.Options{Config: st.Config, Log: servicetest.Logger(t)})
	startGroup(t, other)
	first, err := url.Parse(st.URL)
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	answered := &atomic.Int32{}
	c := mcp.NewClient(&mcp.Implementation{Name: "stack-replicas", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			answered.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"colour": "blue"}}, nil
		},
	})
	routed := &atomic.Int32{}
	hc := &http.Client{Transport: replicaRouter{key: st.Key, answers: other.Addr(), rest: first.Host, routed: routed}}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: st.URL, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	must(t, err)
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "favourite_colour", Arguments: map[string]any{}})
	must(t, err)
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "favourite colour: blue" || answered.Load() != 1 || routed.Load() != 1 {
		t.Errorf("result %+v after %d answers, %d through the other replica", res.Content, answered.Load(), routed.Load())
	}
}
