package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
)

// defaultAnthropicMaxTokens is required by the Messages API; it bounds one
// step, not the turn.
const defaultAnthropicMaxTokens = 8192

// Anthropic speaks Anthropic Messages through anthropic-sdk-go.
type Anthropic struct {
	name     string
	client   anthropic.Client
	sampling Sampling
}

// NewAnthropic returns a Messages provider.
func NewAnthropic(opts ClientOptions) *Anthropic {
	ro := []option.RequestOption{option.WithAPIKey(opts.APIKey), option.WithMaxRetries(opts.retries())}
	if opts.BaseURL != "" {
		ro = append(ro, option.WithBaseURL(opts.BaseURL))
	}
	if opts.HTTPClient != nil {
		ro = append(ro, option.WithHTTPClient(opts.HTTPClient))
	}
	if opts.Timeout > 0 {
		ro = append(ro, option.WithRequestTimeout(opts.Timeout))
	}
	if t := opts.Sampling.Temperature; t != nil {
		// This SDK's params have no temperature field; the API takes one.
		ro = append(ro, option.WithJSONSet("temperature", *t))
	}
	return &Anthropic{name: opts.Name, client: anthropic.NewClient(ro...), sampling: opts.Sampling}
}

// Stream implements Provider.
func (p *Anthropic) Stream(ctx context.Context, req *Request, onDelta func(Delta)) (*Response, error) {
	resp, err := p.stream(ctx, req, onDelta)
	return resp, named(p.name, err)
}

func (p *Anthropic) stream(ctx context.Context, req *Request, onDelta func(Delta)) (*Response, error) {
	params, err := anthropicParams(req)
	if err != nil {
		return nil, err
	}
	if n := p.sampling.limit(); req.MaxTokens <= 0 && n > 0 {
		params.MaxTokens = n
	}
	// Messages.NewStreaming, with the SDK's SSE decoder and stream (ping
	// and error events) over our anthropicEvent instead of its
	// MessageStreamEventUnion.
	var raw *http.Response
	err = p.client.Post(ctx, "v1/messages", params, &raw, option.WithJSONSet("stream", true))
	stream := ssestream.NewStream[anthropicEvent](ssestream.NewDecoder(raw), err)
	defer stream.Close()
	var acc anthropicAccumulator
	delivered := false
	for stream.Next() {
		ev := stream.Current()
		if err := acc.add(&ev); err != nil {
			return nil, &Error{Kind: "stream_broken", Partial: delivered, Err: err}
		}
		if ev.Type == "content_block_delta" {
			d := Delta{Text: ev.Delta.Text, Reasoning: ev.Delta.Thinking}
			if d.Text != "" || d.Reasoning != "" {
				delivered = true
				onDelta(d)
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, anthropicError(err, delivered)
	}
	if acc.stop == "" {
		return nil, &Error{Kind: "stream_broken", Partial: delivered, Err: errors.New("the stream ended before message_delta")}
	}
	stop := acc.stop
	switch stop {
	case "end_turn", "stop_sequence":
		stop = "stop"
	case "tool_use":
		stop = "tool_calls"
	case "max_tokens":
		stop = "length"
	}
	return &Response{Message: acc.message(), StopReason: stop, Model: acc.model, Usage: acc.usage}, nil
}

func anthropicError(err error, delivered bool) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		return &Error{Kind: kindOfStatus(apiErr.StatusCode), Status: apiErr.StatusCode, Partial: delivered, Err: errors.New(http.StatusText(apiErr.StatusCode))}
	}
	kind := "unavailable"
	if delivered {
		kind = "stream_broken"
	}
	return &Error{Kind: kind, Partial: delivered, Err: err}
}

func anthropicParams(req *Request) (anthropic.MessageNewParams, error) {
	p := anthropic.MessageNewParams{
		Model:     anthropic.Model(req.Model),
		MaxTokens: int64(req.MaxTokens),
		// Automatic prompt caching: the provider caches the longest
		// reusable prefix (system, tools, earlier turns).
		CacheControl: anthropic.NewCacheControlEphemeralParam(),
	}
	if p.MaxTokens <= 0 {
		p.MaxTokens = defaultAnthropicMaxTokens
	}
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	c := cmp.Or(req.Cache, &Cache{})
	msgs, err := c.encodedMessages("anthropic", req.Messages, anthropicSpan, func(m []Message) ([]byte, error) {
		mp, err := anthropicMessage(m)
		if err != nil {
			return nil, err
		}
		return mp.MarshalJSON()
	})
	if err != nil {
		return p, err
	}
	p.Messages = overridden(msgs, param.Override[anthropic.MessageParam])
	tools, err := c.encodedTools("anthropic", req.Tools, func(t Tool) ([]byte, error) {
		u, err := anthropicTool(t)
		if err != nil {
			return nil, err
		}
		return u.MarshalJSON()
	})
	if err != nil {
		return p, err
	}
	p.Tools = overridden(tools, param.Override[anthropic.ToolUnionParam])
	return p, nil
}

// anthropicSpan is how many messages from msgs[i] one Messages API
// message takes: consecutive tool results travel in one user message.
func anthropicSpan(msgs []Message, i int) int {
	n := 1
	if msgs[i].Role == RoleTool {
		for i+n < len(msgs) && msgs[i+n].Role == RoleTool {
			n++
		}
	}
	return n
}

// anthropicMessage is one API message (one neutral message, or a run of
// tool results) as the SDK's params.
func anthropicMessage(msgs []Message) (anthropic.MessageParam, error) {
	m := msgs[0]
	switch m.Role {
	case RoleUser:
		return anthropic.NewUserMessage(anthropicUser(m)...), nil
	case RoleTool:
		blocks := make([]anthropic.ContentBlockParamUnion, len(msgs))
		for i, t := range msgs {
			blocks[i] = anthropic.NewToolResultBlock(t.ToolCallID, t.Content, t.IsError)
		}
		return anthropic.NewUserMessage(blocks...), nil
	case RoleAssistant:
		var blocks []anthropic.ContentBlockParamUnion
		if m.Content != "" {
			blocks = append(blocks, anthropic.NewTextBlock(m.Content))
		}
		for _, tc := range m.ToolCalls {
			blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, tc.Args, tc.Name))
		}
		if len(blocks) == 0 {
			blocks = append(blocks, anthropic.NewTextBlock("(no answer)"))
		}
		return anthropic.NewAssistantMessage(blocks...), nil
	}
	return anthropic.MessageParam{}, fmt.Errorf("building request: unknown role %q", m.Role)
}

// anthropicTool is one tool as the SDK's params.
func anthropicTool(t Tool) (anthropic.ToolUnionParam, error) {
	schema, err := rawSchema(t.InputSchema)
	if err != nil {
		return anthropic.ToolUnionParam{}, fmt.Errorf("building request: schema of tool %s: %w", t.Name, err)
	}
	in := anthropic.ToolInputSchemaParam{ExtraFields: map[string]any{}}
	if props, ok := schema["properties"]; ok {
		in.Properties = props
	}
	var required []any
	if raw, ok := schema["required"].(json.RawMessage); ok && json.Unmarshal(raw, &required) == nil {
		for _, r := range required {
			if s, ok := r.(string); ok {
				in.Required = append(in.Required, s)
			}
		}
	}
	for k, v := range schema {
		if k != "properties" && k != "required" && k != "type" {
			in.ExtraFields[k] = v
		}
	}
	tp := anthropic.ToolParam{Name: t.Name, InputSchema: in}
	if t.Description != "" {
		tp.Description = anthropic.String(t.Description)
	}
	return anthropic.ToolUnionParam{OfTool: &tp}, nil
}

// anthropicUser is a user message's blocks: images as image blocks and
// PDFs as document blocks (base64 sources), then the text.
func anthropicUser(m Message) []anthropic.ContentBlockParamUnion {
	var blocks []anthropic.ContentBlockParamUnion
	for _, a := range m.Attachments {
		switch {
		case a.IsImage():
			blocks = append(blocks, anthropic.NewImageBlockBase64(a.Type, a.base64()))
		case a.IsPDF():
			doc := anthropic.NewDocumentBlock(anthropic.Base64PDFSourceParam{Data: a.base64()})
			doc.OfDocument.Title = anthropic.String(a.Name)
			blocks = append(blocks, doc)
		}
	}
	return append(blocks, anthropic.NewTextBlock(withNotes(m)))
}
