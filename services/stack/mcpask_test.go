package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
			var (
				mu    sync.Mutex
				logs  []askLog
				asked string
			)
			c := mcp.NewClient(&mcp.Implementation{Name: "stack-ask", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					asked = req.Params.Message
					mu.Unlock()
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"colour": "green"}}, nil
				},
				LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
					mu.Lock()
					logs = append(logs, askLog{Level: string(req.Params.Level), Logger: req.Params.Logger, Data: req.Params.Data})
					mu.Unlock()
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
