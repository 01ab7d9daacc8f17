package scripted

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
)

type responsesRequest struct {
	Model        string          `json:"model"`
	Stream       bool            `json:"stream"`
	Instructions string          `json:"instructions"`
	Temperature  *float64        `json:"temperature"`
	MaxOutput    int             `json:"max_output_tokens"`
	Input        json.RawMessage `json:"input"`
	Tools        []struct {
		Type            string            `json:"type"`
		ServerLabel     string            `json:"server_label"`
		ServerURL       string            `json:"server_url"`
		Authorization   string            `json:"authorization"`
		Headers         map[string]string `json:"headers"`
		RequireApproval json.RawMessage   `json:"require_approval"`
	} `json:"tools"`
}

// parseResponses reads a Responses API request. Only remote MCP tools are
// served (that is what the Base agent sends); the check on
// require_approval matches what the Base agent relies on, since an
// approval round trip would stop the turn.
func parseResponses(r *http.Request) (*Received, error) {
	var req responsesRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return nil, fmt.Errorf("decoding responses request: %w", err)
	}
	if !req.Stream {
		return nil, fmt.Errorf("responses request without stream=true")
	}
	rec := &Received{Format: FormatResponses, Model: req.Model, System: req.Instructions, Header: r.Header, Temperature: req.Temperature,
		MaxTokens: req.MaxOutput}
	var s string
	if json.Unmarshal(req.Input, &s) == nil {
		rec.Messages = append(rec.Messages, llm.Message{Role: llm.RoleUser, Content: s})
	} else {
		var items []struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(req.Input, &items); err != nil {
			return nil, fmt.Errorf("decoding responses input: %w", err)
		}
		for _, it := range items {
			if it.Type != "" && it.Type != "message" {
				return nil, fmt.Errorf("input item of type %q is not served", it.Type)
			}
			switch it.Role {
			case "user", "assistant":
				parts, err := fileParts(it.Content, len(rec.Messages))
				if err != nil {
					return nil, err
				}
				rec.Parts = append(rec.Parts, parts...)
				rec.Messages = append(rec.Messages, llm.Message{Role: it.Role, Content: text(it.Content)})
			case "system", "developer":
				rec.System += text(it.Content)
			default:
				return nil, fmt.Errorf("unknown role %q", it.Role)
			}
		}
	}
	for _, t := range req.Tools {
		if t.Type != "mcp" {
			return nil, fmt.Errorf("tool of type %q is not served; the scripted Responses endpoint serves mcp tools", t.Type)
		}
		if rec.MCP != nil {
			return nil, fmt.Errorf("the scripted provider serves one MCP server per request")
		}
		if t.ServerLabel == "" || t.ServerURL == "" {
			return nil, fmt.Errorf("mcp tool needs server_label and server_url")
		}
		var approval string
		if json.Unmarshal(t.RequireApproval, &approval) != nil || approval != "never" {
			return nil, fmt.Errorf("mcp tool has require_approval %s; the scripted provider does no approvals (want \"never\")", t.RequireApproval)
		}
		m := &MCPServer{Label: t.ServerLabel, URL: t.ServerURL, Headers: map[string]string{}}
		for k, v := range t.Headers {
			if strings.EqualFold(k, "Authorization") {
				m.Authorization = v
				continue
			}
			m.Headers[k] = v
		}
		if t.Authorization != "" {
			m.Authorization = "Bearer " + t.Authorization
		}
		rec.MCP = m
	}
	if rec.MCP == nil {
		return nil, fmt.Errorf("responses request without an mcp tool")
	}
	return rec, nil
}

// responsesSink streams Responses API events: an mcp_list_tools item, then
// per step reasoning, message and mcp_call items, then response.completed.
type responsesSink struct {
	e     *emitter
	rec   *Received
	id    string
	seq   int
	items []any
	calls map[string]map[string]any
}

func (k *responsesSink) send(typ string, v map[string]any) {
	v["type"] = typ
	v["sequence_number"] = k.seq
	k.seq++
	k.e.send(typ, v)
}

func (k *responsesSink) response(status string, usage any) map[string]any {
	out := append([]any{}, k.items...)
	return map[string]any{"id": k.id, "object": "response", "created_at": time.Now().Unix(), "status": status, "model": k.rec.Model,
		"output": out, "usage": usage, "error": nil, "incomplete_details": nil, "parallel_tool_calls": true, "tools": []any{}}
}

// added announces an item; done finishes it and returns its output index.
func (k *responsesSink) added(item map[string]any) int {
	k.send("response.output_item.added", map[string]any{"output_index": len(k.items), "item": item})
	return len(k.items)
}

func (k *responsesSink) done(item map[string]any) {
	k.send("response.output_item.done", map[string]any{"output_index": len(k.items), "item": item})
	k.items = append(k.items, item)
}

func (k *responsesSink) begin(tools []*mcp.Tool) {
	k.send("response.created", map[string]any{"response": k.response("in_progress", nil)})
	k.send("response.in_progress", map[string]any{"response": k.response("in_progress", nil)})
	id := fmt.Sprintf("mcpl_%d", k.seq)
	item := map[string]any{"id": id, "type": "mcp_list_tools", "server_label": k.rec.MCP.Label, "tools": []any{}}
	idx := k.added(item)
	k.send("response.mcp_list_tools.in_progress", map[string]any{"item_id": id, "output_index": idx})
	var listed []any
	for _, t := range tools {
		listed = append(listed, map[string]any{"name": t.Name, "description": t.Description, "input_schema": t.InputSchema, "annotations": t.Annotations})
	}
	k.send("response.mcp_list_tools.completed", map[string]any{"item_id": id, "output_index": idx})
	item["tools"] = listed
	k.done(item)
}

func (k *responsesSink) say(step Step) {
	if step.Reasoning != "" {
		id := fmt.Sprintf("rs_%d", k.seq)
		idx := k.added(map[string]any{"id": id, "type": "reasoning", "summary": []any{}})
		k.send("response.reasoning_summary_part.added", map[string]any{"item_id": id, "output_index": idx, "summary_index": 0, "part": map[string]any{"type": "summary_text", "text": ""}})
		for _, p := range pieces(step.Reasoning) {
			k.send("response.reasoning_summary_text.delta", map[string]any{"item_id": id, "output_index": idx, "summary_index": 0, "delta": p})
		}
		part := map[string]any{"type": "summary_text", "text": step.Reasoning}
		k.send("response.reasoning_summary_text.done", map[string]any{"item_id": id, "output_index": idx, "summary_index": 0, "text": step.Reasoning})
		k.send("response.reasoning_summary_part.done", map[string]any{"item_id": id, "output_index": idx, "summary_index": 0, "part": part})
		k.done(map[string]any{"id": id, "type": "reasoning", "summary": []any{part}})
	}
	if step.Text != "" {
		id := fmt.Sprintf("msg_%d", k.seq)
		idx := k.added(map[string]any{"id": id, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}})
		k.send("response.content_part.added", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		for _, p := range pieces(step.Text) {
			k.send("response.output_text.delta", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "delta": p, "logprobs": []any{}})
		}
		if step.DropAfterText {
			return
		}
		part := map[string]any{"type": "output_text", "text": step.Text, "annotations": []any{}}
		k.send("response.output_text.done", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "text": step.Text, "logprobs": []any{}})
		k.send("response.content_part.done", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "part": part})
		k.done(map[string]any{"id": id, "type": "message", "status": "completed", "role": "assistant", "content": []any{part}})
	}
}

func (k *responsesSink) callID(c Call, step, i int) string {
	if c.ID != "" {
		return c.ID
	}
	return fmt.Sprintf("mcp_%d_%d", step, i)
}

func (k *responsesSink) call(id string, c Call) {
	item := map[string]any{"id": id, "type": "mcp_call", "server_label": k.rec.MCP.Label, "name": c.Name, "arguments": "",
		"status": "in_progress", "output": nil, "error": nil, "approval_request_id": nil}
	k.calls[id] = item
	idx := k.added(item)
	k.send("response.mcp_call.in_progress", map[string]any{"item_id": id, "output_index": idx})
	half := len(c.Args) / 2
	for _, a := range []string{c.Args[:half], c.Args[half:]} {
		k.send("response.mcp_call_arguments.delta", map[string]any{"item_id": id, "output_index": idx, "delta": a})
	}
	k.send("response.mcp_call_arguments.done", map[string]any{"item_id": id, "output_index": idx, "arguments": c.Args})
}

func (k *responsesSink) result(id string, c Call, content string, isError, protocol bool) {
	item := k.calls[id]
	delete(k.calls, id)
	item["arguments"] = c.Args
	idx := len(k.items)
	switch {
	case protocol:
		item["status"], item["error"] = "failed", map[string]any{"type": "mcp_protocol_error", "code": -32602, "message": content}
	case isError:
		item["status"], item["error"] = "failed", map[string]any{"type": "mcp_tool_execution_error", "content": []any{map[string]any{"type": "text", "text": content}}}
	default:
		item["status"], item["output"] = "completed", content
	}
	if item["status"] == "failed" {
		k.send("response.mcp_call.failed", map[string]any{"item_id": id, "output_index": idx})
	} else {
		k.send("response.mcp_call.completed", map[string]any{"item_id": id, "output_index": idx})
	}
	k.done(item)
}

func (k *responsesSink) end(in, out int64) {
	k.send("response.completed", map[string]any{"response": k.response("completed", map[string]any{
		"input_tokens": in, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": out, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": in + out})})
}

func (k *responsesSink) fail(msg string) {
	k.send("error", map[string]any{"code": "server_error", "message": msg, "param": nil})
}
