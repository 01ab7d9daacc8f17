package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
)

// mcpSink streams the events of a remote-tools turn in one provider's
// wire format.
type mcpSink interface {
	begin(tools []*mcp.Tool)
	say(step Step)
	callID(c Call, step, i int) string
	call(id string, c Call)
	result(id string, c Call, content string, isError, protocolError bool)
	end(in, out int64)
	fail(msg string)
}

// runMCP serves a request that hands the provider an MCP server, the way
// the real providers do: connect and list the tools before answering (a
// server that cannot be reached fails the request), then run each step's
// tool calls on the server and ask the script for the next step, until a
// step makes no calls.
func (s *Server) runMCP(w http.ResponseWriter, r *http.Request, rec *Received) {
	ctx := r.Context()
	cs, tools, err := connectMCP(ctx, rec.MCP)
	if err != nil {
		writeMCPUnreachable(w, rec.Format, rec.MCP.Label, err)
		return
	}
	defer func() { _ = cs.Close() }()
	rec.Tools = nil
	for _, t := range tools {
		rec.Tools = append(rec.Tools, t.Name)
	}
	first := *rec
	first.Messages = append([]llm.Message(nil), rec.Messages...)
	step, ok := s.next(w, &first, rec)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	e := &emitter{w: w, r: r}
	var sink mcpSink
	if rec.Format == FormatResponses {
		sink = &responsesSink{e: e, rec: rec, id: fmt.Sprintf("resp_%d", time.Now().UnixNano()), calls: map[string]map[string]any{}}
	} else {
		sink = &anthropicMCPSink{e: e, rec: rec}
	}
	sink.begin(tools)
	var in, out int64
	for {
		e.delay = step.Delay
		sink.say(step)
		if step.DropAfterText {
			e.drop()
		}
		i, o := usageOf(step)
		in, out = in+i, out+o
		if len(step.Calls) == 0 {
			sink.end(in, out)
			return
		}
		n := len(rec.Messages)
		asst := llm.Message{Role: llm.RoleAssistant, Content: step.Text, Reasoning: step.Reasoning}
		var results []llm.Message
		for i, c := range step.Calls {
			id := sink.callID(c, n, i)
			sink.call(id, c)
			content, isError, protocol := callMCP(ctx, cs, c)
			sink.result(id, c, content, isError, protocol)
			asst.ToolCalls = append(asst.ToolCalls, llm.ToolCall{ID: id, Name: c.Name, Args: json.RawMessage(c.Args)})
			results = append(results, llm.Message{Role: llm.RoleTool, ToolCallID: id, ToolName: c.Name, Content: content, IsError: isError})
		}
		rec.Messages = append(append(rec.Messages, asst), results...)
		if step, err = s.respond(rec); err != nil {
			s.mu.Lock()
			s.errs = append(s.errs, err)
			s.mu.Unlock()
			sink.fail(err.Error())
			return
		}
		if step.Fault != nil {
			sink.fail(http.StatusText(step.Fault.Status))
			return
		}
	}
}

// headerTransport adds the headers a request gave for its MCP server.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

// RoundTrip implements http.RoundTripper.
func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.header {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// connectMCP connects to an MCP server as the providers' connectors do
// (Streamable HTTP, no standalone event stream) and lists its tools.
func connectMCP(ctx context.Context, m *MCPServer) (*mcp.ClientSession, []*mcp.Tool, error) {
	header := http.Header{}
	for k, v := range m.Headers {
		header.Set(k, v)
	}
	if m.Authorization != "" {
		header.Set("Authorization", m.Authorization)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mirobody-scripted-provider", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: m.URL, DisableStandaloneSSE: true, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: headerTransport{base: http.DefaultTransport, header: header}}}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to the MCP server: %w", err)
	}
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			_ = cs.Close()
			return nil, nil, fmt.Errorf("listing tools: %w", err)
		}
		tools = append(tools, t)
	}
	return cs, tools, nil
}

// callMCP runs one call; protocol is true for a JSON-RPC error (an unknown
// or refused tool) as opposed to a tool that reported an error.
func callMCP(ctx context.Context, cs *mcp.ClientSession, c Call) (content string, isError, protocol bool) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.Name, Arguments: json.RawMessage(c.Args)})
	if err != nil {
		return err.Error(), true, true
	}
	var parts []string
	for _, p := range res.Content {
		switch p := p.(type) {
		case *mcp.TextContent:
			parts = append(parts, p.Text)
		default:
			b, _ := json.Marshal(p)
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		parts = append(parts, string(b))
	}
	return strings.Join(parts, "\n"), res.IsError, false
}

// writeMCPUnreachable answers as the providers do when they cannot list
// an MCP server's tools: OpenAI with 424 Failed Dependency
// (external_connector_error), Anthropic with a 400 naming the server.
func writeMCPUnreachable(w http.ResponseWriter, format, label string, err error) {
	w.Header().Set("Content-Type", "application/json")
	if format == FormatResponses {
		w.WriteHeader(http.StatusFailedDependency)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
			"message": fmt.Sprintf("Error retrieving tool list from MCP server: '%s'. %v", label, err),
			"type":    "external_connector_error", "param": "tools", "code": "http_error"}})
		return
	}
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error",
		"message": fmt.Sprintf("Connection error while communicating with MCP server '%s': %v", label, err)}})
}

// anthropicMCPSink streams Anthropic's MCP connector blocks: mcp_tool_use
// and mcp_tool_result between the text of one assistant message.
type anthropicMCPSink struct {
	e   *emitter
	rec *Received
	idx int
}

func (k *anthropicMCPSink) block(start map[string]any, deltas []map[string]any) {
	k.e.send("content_block_start", map[string]any{"type": "content_block_start", "index": k.idx, "content_block": start})
	for _, d := range deltas {
		k.e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": k.idx, "delta": d})
	}
	k.e.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": k.idx})
	k.idx++
}

func (k *anthropicMCPSink) begin([]*mcp.Tool) {
	k.e.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_%d", time.Now().UnixNano()), "type": "message", "role": "assistant", "model": k.rec.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 1, "output_tokens": 1}}})
}

func (k *anthropicMCPSink) say(step Step) {
	if step.Reasoning != "" {
		var ds []map[string]any
		for _, p := range pieces(step.Reasoning) {
			ds = append(ds, map[string]any{"type": "thinking_delta", "thinking": p})
		}
		ds = append(ds, map[string]any{"type": "signature_delta", "signature": "scripted"})
		k.block(map[string]any{"type": "thinking", "thinking": "", "signature": ""}, ds)
	}
	if step.Text != "" {
		var ds []map[string]any
		for _, p := range pieces(step.Text) {
			ds = append(ds, map[string]any{"type": "text_delta", "text": p})
		}
		if step.DropAfterText {
			k.e.send("content_block_start", map[string]any{"type": "content_block_start", "index": k.idx, "content_block": map[string]any{"type": "text", "text": ""}})
			for _, d := range ds {
				k.e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": k.idx, "delta": d})
			}
			return
		}
		k.block(map[string]any{"type": "text", "text": ""}, ds)
	}
}

func (k *anthropicMCPSink) callID(c Call, step, i int) string {
	if c.ID != "" {
		return c.ID
	}
	return fmt.Sprintf("mcptoolu_%d_%d", step, i)
}

func (k *anthropicMCPSink) call(id string, c Call) {
	half := len(c.Args) / 2
	k.block(map[string]any{"type": "mcp_tool_use", "id": id, "name": c.Name, "server_name": k.rec.MCP.Label, "input": map[string]any{}},
		[]map[string]any{{"type": "input_json_delta", "partial_json": c.Args[:half]}, {"type": "input_json_delta", "partial_json": c.Args[half:]}})
}

func (k *anthropicMCPSink) result(id string, _ Call, content string, isError, _ bool) {
	k.block(map[string]any{"type": "mcp_tool_result", "tool_use_id": id, "is_error": isError,
		"content": []any{map[string]any{"type": "text", "text": content}}}, nil)
}

func (k *anthropicMCPSink) end(in, out int64) {
	k.e.send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
		"usage": map[string]any{"input_tokens": in, "output_tokens": out}})
	k.e.send("message_stop", map[string]any{"type": "message_stop"})
}

func (k *anthropicMCPSink) fail(msg string) {
	k.e.send("error", map[string]any{"type": "error", "error": map[string]any{"type": "api_error", "message": msg}})
}
