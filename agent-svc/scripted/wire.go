package scripted

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
)

type openaiRequest struct {
	Model               string   `json:"model"`
	Stream              bool     `json:"stream"`
	Temperature         *float64 `json:"temperature"`
	MaxTokens           int      `json:"max_tokens"`
	MaxCompletionTokens int      `json:"max_completion_tokens"`
	Messages            []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

// text returns a content that is a string or an array of text parts.
func text(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type    string          `json:"type"`
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(raw, &parts)
	out := ""
	for _, p := range parts {
		out += p.Text
	}
	return out
}

func parseOpenAI(r *http.Request) (*Received, error) {
	var req openaiRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return nil, fmt.Errorf("decoding chat completions request: %w", err)
	}
	if !req.Stream {
		return nil, fmt.Errorf("chat completions request without stream=true")
	}
	rec := &Received{Format: FormatOpenAI, Model: req.Model, Header: r.Header, Temperature: req.Temperature, MaxTokens: req.MaxTokens,
		MaxCompletionTokens: req.MaxCompletionTokens}
	for _, t := range req.Tools {
		if !json.Valid(t.Function.Parameters) {
			return nil, fmt.Errorf("tool %s has invalid parameters", t.Function.Name)
		}
		rec.Tools = append(rec.Tools, t.Function.Name)
	}
	for _, m := range req.Messages {
		switch m.Role {
		case "system", "developer":
			rec.System += text(m.Content)
		case "user":
			parts, err := fileParts(m.Content, len(rec.Messages))
			if err != nil {
				return nil, err
			}
			rec.Parts = append(rec.Parts, parts...)
			rec.Messages = append(rec.Messages, llm.Message{Role: llm.RoleUser, Content: text(m.Content)})
		case "tool":
			rec.Messages = append(rec.Messages, llm.Message{Role: llm.RoleTool, Content: text(m.Content), ToolCallID: m.ToolCallID})
		case "assistant":
			msg := llm.Message{Role: llm.RoleAssistant, Content: text(m.Content)}
			for _, tc := range m.ToolCalls {
				msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: json.RawMessage(tc.Function.Arguments)})
			}
			rec.Messages = append(rec.Messages, msg)
		default:
			return nil, fmt.Errorf("unknown role %q", m.Role)
		}
	}
	return rec, nil
}

func streamOpenAI(e *emitter, rec *Received, step Step) {
	id := fmt.Sprintf("chatcmpl-%d", time.Now().UnixNano())
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": rec.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	e.send("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, p := range pieces(step.Reasoning) {
		e.send("", chunk(map[string]any{"reasoning_content": p}, nil))
	}
	for _, p := range pieces(step.Text) {
		e.send("", chunk(map[string]any{"content": p}, nil))
	}
	if step.DropAfterText {
		e.drop()
	}
	n := len(rec.Messages)
	for i, c := range step.Calls {
		cid := callID(c, n, i)
		e.send("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": cid, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil))
		half := len(c.Args) / 2
		for _, a := range []string{c.Args[:half], c.Args[half:]} {
			e.send("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": a}}}}, nil))
		}
	}
	finish := "stop"
	if len(step.Calls) > 0 {
		finish = "tool_calls"
	}
	e.send("", chunk(map[string]any{}, finish))
	in, out := usageOf(step)
	e.send("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": rec.Model,
		"choices": []any{}, "usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}})
	e.raw("data: [DONE]\n\n")
}

type anthropicRequest struct {
	Model       string          `json:"model"`
	Stream      bool            `json:"stream"`
	MaxTokens   int             `json:"max_tokens"`
	Temperature *float64        `json:"temperature"`
	System      json.RawMessage `json:"system"`
	Messages    []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Type          string          `json:"type"`
		Name          string          `json:"name"`
		InputSchema   json.RawMessage `json:"input_schema"`
		MCPServerName string          `json:"mcp_server_name"`
	} `json:"tools"`
	MCPServers []struct {
		Type               string `json:"type"`
		Name               string `json:"name"`
		URL                string `json:"url"`
		AuthorizationToken string `json:"authorization_token"`
	} `json:"mcp_servers"`
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func parseAnthropic(r *http.Request) (*Received, error) {
	var req anthropicRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return nil, fmt.Errorf("decoding messages request: %w", err)
	}
	if !req.Stream {
		return nil, fmt.Errorf("messages request without stream=true")
	}
	if req.MaxTokens <= 0 {
		return nil, fmt.Errorf("messages request without max_tokens")
	}
	rec := &Received{Format: FormatAnthropic, Model: req.Model, System: text(req.System), Header: r.Header, Temperature: req.Temperature,
		MaxTokens: req.MaxTokens}
	toolsets := map[string]bool{}
	for _, t := range req.Tools {
		if t.Type == "mcp_toolset" {
			toolsets[t.MCPServerName] = true
			continue
		}
		rec.Tools = append(rec.Tools, t.Name)
	}
	if err := anthropicMCP(r, rec, &req, toolsets); err != nil {
		return nil, err
	}
	for _, m := range req.Messages {
		var blocks []anthropicBlock
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			blocks = []anthropicBlock{{Type: "text", Text: s}}
		} else if err := json.Unmarshal(m.Content, &blocks); err != nil {
			return nil, fmt.Errorf("decoding message content: %w", err)
		}
		if m.Role == "assistant" {
			msg := llm.Message{Role: llm.RoleAssistant}
			for _, b := range blocks {
				switch b.Type {
				case "text":
					msg.Content += b.Text
				case "tool_use":
					msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Args: b.Input})
				}
			}
			rec.Messages = append(rec.Messages, msg)
			continue
		}
		user := ""
		for _, b := range blocks {
			switch b.Type {
			case "text":
				user += b.Text
			case "tool_result":
				rec.Messages = append(rec.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: b.ToolUseID, Content: text(b.Content), IsError: b.IsError})
			}
		}
		if user != "" {
			parts, err := fileParts(m.Content, len(rec.Messages))
			if err != nil {
				return nil, err
			}
			rec.Parts = append(rec.Parts, parts...)
			rec.Messages = append(rec.Messages, llm.Message{Role: llm.RoleUser, Content: user})
		}
	}
	return rec, nil
}

func streamAnthropic(e *emitter, rec *Received, step Step) {
	in, out := usageOf(step)
	e.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_%d", time.Now().UnixNano()), "type": "message", "role": "assistant", "model": rec.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": in, "output_tokens": 1}}})
	idx := 0
	block := func(start map[string]any, deltas []map[string]any) {
		e.send("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": start})
		for _, d := range deltas {
			e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": d})
		}
		e.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	if step.Reasoning != "" {
		var ds []map[string]any
		for _, p := range pieces(step.Reasoning) {
			ds = append(ds, map[string]any{"type": "thinking_delta", "thinking": p})
		}
		ds = append(ds, map[string]any{"type": "signature_delta", "signature": "scripted"})
		block(map[string]any{"type": "thinking", "thinking": "", "signature": ""}, ds)
	}
	if step.Text != "" {
		var ds []map[string]any
		for _, p := range pieces(step.Text) {
			ds = append(ds, map[string]any{"type": "text_delta", "text": p})
		}
		if step.DropAfterText {
			e.send("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "text", "text": ""}})
			for _, d := range ds {
				e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": d})
			}
			e.drop()
		}
		block(map[string]any{"type": "text", "text": ""}, ds)
	}
	n := len(rec.Messages)
	for i, c := range step.Calls {
		half := len(c.Args) / 2
		block(map[string]any{"type": "tool_use", "id": callID(c, n, i), "name": c.Name, "input": map[string]any{}},
			[]map[string]any{{"type": "input_json_delta", "partial_json": c.Args[:half]}, {"type": "input_json_delta", "partial_json": c.Args[half:]}})
	}
	stop := "end_turn"
	if len(step.Calls) > 0 {
		stop = "tool_use"
	}
	e.send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": out}})
	e.send("message_stop", map[string]any{"type": "message_stop"})
}

// anthropicMCPBeta is the MCP connector beta whose request shape the
// server checks: mcp_servers plus an mcp_toolset tool naming each one.
const anthropicMCPBeta = "mcp-client-2025-11-20"

// anthropicMCP checks the MCP connector part of a request as the real API
// does and notes the server.
func anthropicMCP(r *http.Request, rec *Received, req *anthropicRequest, toolsets map[string]bool) error {
	if len(req.MCPServers) == 0 {
		if len(toolsets) > 0 {
			return fmt.Errorf("mcp_toolset without mcp_servers")
		}
		return nil
	}
	if !strings.Contains(r.Header.Get("anthropic-beta"), anthropicMCPBeta) {
		return fmt.Errorf("mcp_servers needs the anthropic-beta header %s, got %q", anthropicMCPBeta, r.Header.Get("anthropic-beta"))
	}
	if len(req.MCPServers) != 1 {
		return fmt.Errorf("the scripted provider serves one MCP server per request, got %d", len(req.MCPServers))
	}
	m := req.MCPServers[0]
	if m.Type != "url" || m.Name == "" || m.URL == "" {
		return fmt.Errorf("mcp server %+v needs type url, a name and a url", m.Name)
	}
	if !toolsets[m.Name] {
		return fmt.Errorf("mcp server %s has no mcp_toolset tool", m.Name)
	}
	rec.MCP = &MCPServer{Label: m.Name, URL: m.URL}
	if m.AuthorizationToken != "" {
		rec.MCP.Authorization = "Bearer " + m.AuthorizationToken
	}
	return nil
}
