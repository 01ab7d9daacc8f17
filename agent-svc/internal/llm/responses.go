package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// OpenAIResponses speaks the OpenAI Responses API with a remote MCP tool:
// OpenAI lists and calls the server's tools itself.
type OpenAIResponses struct {
	name     string
	client   openai.Client
	sampling Sampling
}

// NewOpenAIResponses returns a Responses provider.
func NewOpenAIResponses(opts ClientOptions) *OpenAIResponses {
	return &OpenAIResponses{name: opts.Name, client: openai.NewClient(openaiOptions(opts)...), sampling: opts.Sampling}
}

// StreamMCP implements MCPProvider.
func (p *OpenAIResponses) StreamMCP(ctx context.Context, req *MCPRequest, onEvent func(MCPEvent)) (*MCPResponse, error) {
	resp, err := p.streamMCP(ctx, req, onEvent)
	return resp, named(p.name, err)
}

func (p *OpenAIResponses) streamMCP(ctx context.Context, req *MCPRequest, onEvent func(MCPEvent)) (*MCPResponse, error) {
	params := responsesParams(req)
	if t := p.sampling.Temperature; t != nil {
		params.Temperature = openai.Float(*t)
	}
	if n := p.sampling.limit(); req.MaxTokens <= 0 && n > 0 {
		params.MaxOutputTokens = openai.Int(n)
	}
	stream := p.client.Responses.NewStreaming(ctx, params)
	defer stream.Close()
	var tr mcpTranscript
	emit := func(ev MCPEvent) { tr.record(ev, onEvent) }
	// Calls are announced once their arguments are complete, and results
	// arrive with the finished item.
	calls := map[string]*ToolCall{}
	announced := map[string]bool{}
	announce := func(id, name, args string) {
		if announced[id] {
			return
		}
		announced[id] = true
		if args == "" {
			args = "{}"
		}
		emit(MCPEvent{Call: &ToolCall{ID: id, Name: name, Args: json.RawMessage(args)}})
	}
	var final *responses.Response
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta":
			if ev.Delta != "" {
				emit(MCPEvent{Text: ev.Delta})
			}
		case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
			if ev.Delta != "" {
				emit(MCPEvent{Reasoning: ev.Delta})
			}
		case "response.output_item.added":
			if ev.Item.Type == "mcp_call" {
				c := ev.Item.AsMcpCall()
				calls[c.ID] = &ToolCall{ID: c.ID, Name: c.Name}
			}
		case "response.mcp_call_arguments.done":
			if c := calls[ev.ItemID]; c != nil {
				announce(c.ID, c.Name, ev.Arguments)
			}
		case "response.mcp_list_tools.failed":
			return nil, &Error{Kind: KindMCPUnreachable, Partial: tr.delivered, Err: errors.New("the provider could not list the MCP server's tools")}
		case "response.output_item.done":
			switch ev.Item.Type {
			case "mcp_list_tools":
				if msg := errorText(ev.Item.AsMcpListTools().JSON.Error.Raw()); msg != "" {
					return nil, &Error{Kind: KindMCPUnreachable, Partial: tr.delivered, Err: errors.New("the provider could not list the MCP server's tools")}
				}
			case "mcp_call":
				c := ev.Item.AsMcpCall()
				announce(c.ID, c.Name, c.Arguments)
				res := &ToolResult{CallID: c.ID, Name: c.Name, Content: c.Output}
				if msg := errorText(c.JSON.Error.Raw()); msg != "" {
					res.Content, res.IsError = msg, true
				}
				emit(MCPEvent{Result: res})
			}
		case "response.completed", "response.incomplete":
			r := ev.Response
			final = &r
		case "response.failed":
			return nil, responseFailed(string(ev.Response.Error.Code), tr.delivered)
		case "error":
			return nil, responseFailed(ev.Code, tr.delivered)
		}
	}
	if err := stream.Err(); err != nil {
		return nil, responsesError(err, tr.delivered)
	}
	if final == nil {
		return nil, &Error{Kind: "stream_broken", Partial: tr.delivered, Err: errors.New("the stream ended before response.completed")}
	}
	stop := "stop"
	if final.Status == "incomplete" {
		stop = final.IncompleteDetails.Reason
		if stop == "max_output_tokens" {
			stop = "length"
		}
	}
	answer := tr.answer()
	return &MCPResponse{Messages: tr.finish(), Answer: answer, StopReason: stop, Model: string(final.Model), Usage: Usage{
		InputTokens: final.Usage.InputTokens, OutputTokens: final.Usage.OutputTokens, CacheReadTokens: final.Usage.InputTokensDetails.CachedTokens,
	}}, nil
}

func responsesParams(req *MCPRequest) responses.ResponseNewParams {
	mcp := &responses.ToolMcpParam{ServerLabel: req.Server.Label, ServerURL: openai.String(req.Server.URL),
		Headers: map[string]string{"Authorization": "Bearer " + req.Server.Token},
		// Our own policy decides what may run; an approval round trip
		// would need a user in the loop that the chat API does not have.
		RequireApproval: responses.ToolMcpRequireApprovalUnionParam{OfMcpToolApprovalSetting: openai.String("never")}}
	p := responses.ResponseNewParams{Model: req.Model, Tools: []responses.ToolUnionParam{{OfMcp: mcp}},
		// The session lives in our store; nothing needs to stay at OpenAI.
		Store: openai.Bool(false)}
	if req.System != "" {
		p.Instructions = openai.String(req.System)
	}
	if req.MaxTokens > 0 {
		p.MaxOutputTokens = openai.Int(int64(req.MaxTokens))
	}
	if req.MaxSteps > 0 {
		p.MaxToolCalls = openai.Int(int64(req.MaxSteps))
	}
	var items responses.ResponseInputParam
	for _, m := range textHistory(req.Messages) {
		if m.Role == RoleAssistant {
			items = append(items, responses.ResponseInputItemParamOfMessage(m.Content, responses.EasyInputMessageRoleAssistant))
			continue
		}
		items = append(items, responsesUser(m))
	}
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
	return p
}

// responseFailed maps the error code of a failed response.
func responseFailed(code string, delivered bool) error {
	kind := "unavailable"
	switch code {
	case "rate_limit_exceeded":
		kind = "rate_limited"
	case "http_error", "external_connector_error", "mcp_protocol_error":
		kind = KindMCPUnreachable
	case "invalid_prompt":
		kind = "bad_request"
	}
	return &Error{Kind: kind, Partial: delivered, Err: errors.New("the response failed: " + code)}
}

// responsesError maps an HTTP failure. OpenAI answers 424 Failed Dependency
// (type external_connector_error) when it cannot reach the MCP server.
func responsesError(err error, delivered bool) error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) && (apiErr.StatusCode == http.StatusFailedDependency || apiErr.Type == "external_connector_error") {
		return &Error{Kind: KindMCPUnreachable, Status: apiErr.StatusCode, Partial: delivered, Err: errors.New(http.StatusText(apiErr.StatusCode))}
	}
	return openaiError(err, delivered)
}

// errorText reads an MCP error field, which is null, a string or an object
// with a message or text content.
func errorText(raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" || raw == "null" {
		return ""
	}
	var s string
	if json.Unmarshal([]byte(raw), &s) == nil {
		return s
	}
	var obj struct {
		Message string `json:"message"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal([]byte(raw), &obj) != nil {
		return raw
	}
	var parts []string
	for _, c := range obj.Content {
		parts = append(parts, c.Text)
	}
	if text := strings.Join(parts, "\n"); text != "" {
		return text
	}
	if obj.Message != "" {
		return obj.Message
	}
	return raw
}

// responsesUser is a user message: text, or an input list with
// input_image and input_file items for its images and PDFs.
func responsesUser(m Message) responses.ResponseInputItemUnionParam {
	text := withNotes(m)
	content := responses.ResponseInputMessageContentListParam{{OfInputText: &responses.ResponseInputTextParam{Text: text}}}
	for _, a := range m.Attachments {
		switch {
		case a.IsImage():
			content = append(content, responses.ResponseInputContentUnionParam{OfInputImage: &responses.ResponseInputImageParam{
				ImageURL: openai.String(a.dataURL()), Detail: responses.ResponseInputImageDetailAuto}})
		case a.IsPDF():
			content = append(content, responses.ResponseInputContentUnionParam{OfInputFile: &responses.ResponseInputFileParam{
				FileData: openai.String(a.dataURL()), Filename: openai.String(a.Name)}})
		}
	}
	if len(content) == 1 {
		return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser)
	}
	return responses.ResponseInputItemParamOfMessage(content, responses.EasyInputMessageRoleUser)
}
