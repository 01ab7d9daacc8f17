package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
)

// AnthropicMCPBeta is the MCP connector beta the Anthropic provider asks
// for: mcp_servers plus an mcp_toolset tool per server.
const AnthropicMCPBeta = anthropic.AnthropicBetaMCPClient2025_11_20

// StreamMCP implements MCPProvider with Anthropic's MCP connector: the
// Messages API lists and calls the server's tools and streams them as
// mcp_tool_use and mcp_tool_result blocks.
func (p *Anthropic) StreamMCP(ctx context.Context, req *MCPRequest, onEvent func(MCPEvent)) (*MCPResponse, error) {
	resp, err := p.streamMCP(ctx, req, onEvent)
	return resp, named(p.name, err)
}

func (p *Anthropic) streamMCP(ctx context.Context, req *MCPRequest, onEvent func(MCPEvent)) (*MCPResponse, error) {
	params := anthropicMCPParams(req)
	if n := p.sampling.limit(); req.MaxTokens <= 0 && n > 0 {
		params.MaxTokens = n
	}
	var tr mcpTranscript
	emit := func(ev MCPEvent) { tr.record(ev, onEvent) }
	var usage Usage
	steps := max(req.MaxSteps, 1)
	for step := 0; ; step++ {
		acc, err := p.streamMCPStep(ctx, params, emit, &tr)
		if err != nil {
			return nil, err
		}
		usage = usage.Add(Usage{InputTokens: acc.Usage.InputTokens, OutputTokens: acc.Usage.OutputTokens,
			CacheReadTokens: acc.Usage.CacheReadInputTokens, CacheWriteTokens: acc.Usage.CacheCreationInputTokens})
		stop := string(acc.StopReason)
		// A long tool loop pauses; sending the paused turn back resumes it.
		if stop == string(anthropic.BetaStopReasonPauseTurn) && step+1 < steps {
			params.Messages = append(params.Messages, acc.ToParam())
			continue
		}
		switch stop {
		case "end_turn", "stop_sequence":
			stop = "stop"
		case "max_tokens":
			stop = "length"
		}
		answer := tr.answer()
		return &MCPResponse{Messages: tr.finish(), Answer: answer, Usage: usage, StopReason: stop, Model: string(acc.Model)}, nil
	}
}

func (p *Anthropic) streamMCPStep(ctx context.Context, params anthropic.BetaMessageNewParams, emit func(MCPEvent), tr *mcpTranscript) (*anthropic.BetaMessage, error) {
	stream := p.client.Beta.Messages.NewStreaming(ctx, params)
	defer stream.Close()
	var acc anthropic.BetaMessage
	for stream.Next() {
		ev := stream.Current()
		if err := acc.Accumulate(ev); err != nil {
			return nil, &Error{Kind: "stream_broken", Partial: tr.delivered, Err: err}
		}
		switch ev.Type {
		case "content_block_delta":
			if ev.Delta.Text != "" || ev.Delta.Thinking != "" {
				emit(MCPEvent{Text: ev.Delta.Text, Reasoning: ev.Delta.Thinking})
			}
		case "content_block_stop":
			// The input of an mcp_tool_use block is complete at its stop.
			if int(ev.Index) >= len(acc.Content) {
				continue
			}
			b := acc.Content[ev.Index]
			switch b.Type {
			case "mcp_tool_use":
				args := b.Input
				if len(args) == 0 {
					args = json.RawMessage("{}")
				}
				emit(MCPEvent{Call: &ToolCall{ID: b.ID, Name: b.Name, Args: args}})
			case "mcp_tool_result":
				emit(MCPEvent{Result: mcpToolResult(b.RawJSON())})
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, anthropicMCPError(err, tr.delivered)
	}
	if acc.StopReason == "" {
		return nil, &Error{Kind: "stream_broken", Partial: tr.delivered, Err: errors.New("the stream ended before message_delta")}
	}
	return &acc, nil
}

// mcpToolResult reads an mcp_tool_result block; its content is a string
// or a list of text blocks.
func mcpToolResult(raw string) *ToolResult {
	var b struct {
		ToolUseID string          `json:"tool_use_id"`
		IsError   bool            `json:"is_error"`
		Content   json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal([]byte(raw), &b)
	return &ToolResult{CallID: b.ToolUseID, IsError: b.IsError, Content: blockText(b.Content)}
}

func blockText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "\n")
}

// anthropicMCPError maps an HTTP failure. The connector reports an MCP
// server it cannot reach as a 4xx whose message names the MCP server (the
// API has no error code for it), so that is what is matched.
func anthropicMCPError(err error, delivered bool) error {
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) && apiErr.StatusCode >= 400 && apiErr.StatusCode < 500 && apiErr.StatusCode != http.StatusTooManyRequests &&
		strings.Contains(strings.ToLower(apiErr.Message), "mcp server") {
		return &Error{Kind: KindMCPUnreachable, Status: apiErr.StatusCode, Partial: delivered, Err: errors.New(http.StatusText(apiErr.StatusCode))}
	}
	return anthropicError(err, delivered)
}

func anthropicMCPParams(req *MCPRequest) anthropic.BetaMessageNewParams {
	p := anthropic.BetaMessageNewParams{
		Model:     anthropic.Model(req.Model),
		MaxTokens: int64(req.MaxTokens),
		MCPServers: []anthropic.BetaRequestMCPServerURLDefinitionParam{{Name: req.Server.Label, URL: req.Server.URL,
			AuthorizationToken: anthropic.String(req.Server.Token)}},
		Tools:        []anthropic.BetaToolUnionParam{anthropic.BetaToolUnionParamOfMCPToolset(req.Server.Label)},
		Betas:        []anthropic.AnthropicBeta{AnthropicMCPBeta},
		CacheControl: anthropic.NewBetaCacheControlEphemeralParam(),
	}
	if p.MaxTokens <= 0 {
		p.MaxTokens = defaultAnthropicMaxTokens
	}
	if req.System != "" {
		p.System = []anthropic.BetaTextBlockParam{{Text: req.System}}
	}
	for _, m := range textHistory(req.Messages) {
		block := anthropic.NewBetaTextBlock(withNotes(m))
		if m.Role == RoleAssistant {
			p.Messages = append(p.Messages, anthropic.BetaMessageParam{OfAssistant: &anthropic.BetaAssistantMessageParam{Content: []anthropic.BetaContentBlockParamUnion{block}}})
			continue
		}
		p.Messages = append(p.Messages, anthropic.NewBetaUserMessage(append(anthropicBetaAttachments(m), block)...))
	}
	return p
}

// anthropicBetaAttachments are the image and document blocks of a user
// message's attachments, as anthropicUser makes them for the Messages API.
func anthropicBetaAttachments(m Message) []anthropic.BetaContentBlockParamUnion {
	var blocks []anthropic.BetaContentBlockParamUnion
	for _, a := range m.Attachments {
		switch {
		case a.IsImage():
			blocks = append(blocks, anthropic.NewBetaImageBlock(anthropic.BetaBase64ImageSourceParam{Data: a.base64(), MediaType: anthropic.BetaBase64ImageSourceMediaType(a.Type)}))
		case a.IsPDF():
			doc := anthropic.NewBetaDocumentBlock(anthropic.BetaBase64PDFSourceParam{Data: a.base64()})
			doc.OfDocument.Title = anthropic.String(a.Name)
			blocks = append(blocks, doc)
		}
	}
	return blocks
}
