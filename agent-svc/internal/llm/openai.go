package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"
)

// ClientOptions configures a provider client.
type ClientOptions struct {
	// Name is the provider's configured name, which errors carry.
	Name string
	// BaseURL overrides the provider's endpoint (OpenRouter, Gemini, Ollama,
	// vLLM, the scripted test server...).
	BaseURL string
	// APIKey is the secret; it never appears in errors or logs.
	APIKey string
	// MaxRetries is how often a 429 or 5xx answer is retried, with backoff
	// that honours Retry-After (the SDKs do this). Zero means 3.
	MaxRetries int
	// HTTPClient replaces http.DefaultClient.
	HTTPClient *http.Client
	// Timeout bounds one HTTP attempt; zero means none beyond ctx.
	Timeout time.Duration
	// Sampling is sent with every request.
	Sampling Sampling
}

// Sampling holds a configured provider's request settings (temperature,
// max_tokens, max_completion_tokens); zero values leave a setting out.
type Sampling struct {
	Temperature         *float64
	MaxTokens           int
	MaxCompletionTokens int
}

// limit is the one answer-length bound of an API that has only one:
// max_completion_tokens when set, else max_tokens (0 for neither).
func (s Sampling) limit() int64 {
	return int64(cmp.Or(s.MaxCompletionTokens, s.MaxTokens))
}

func (o ClientOptions) retries() int {
	if o.MaxRetries == 0 {
		return 3
	}
	return max(o.MaxRetries, 0)
}

// OpenAI speaks OpenAI-compatible Chat Completions through openai-go.
type OpenAI struct {
	name     string
	client   openai.Client
	sampling Sampling
}

// NewOpenAI returns a Chat Completions provider.
func NewOpenAI(opts ClientOptions) *OpenAI {
	return &OpenAI{name: opts.Name, client: openai.NewClient(openaiOptions(opts)...), sampling: opts.Sampling}
}

// openaiOptions are openai-go's request options for opts, shared by the
// Chat Completions and Responses clients.
func openaiOptions(opts ClientOptions) []option.RequestOption {
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
	return ro
}

// Stream implements Provider.
func (p *OpenAI) Stream(ctx context.Context, req *Request, onDelta func(Delta)) (*Response, error) {
	resp, err := p.stream(ctx, req, onDelta)
	return resp, named(p.name, err)
}

func (p *OpenAI) stream(ctx context.Context, req *Request, onDelta func(Delta)) (*Response, error) {
	params, err := openaiParams(req)
	if err != nil {
		return nil, err
	}
	// Sent as configured: OpenRouter and Gemini take max_tokens, newer
	// OpenAI models only max_completion_tokens.
	if t := p.sampling.Temperature; t != nil {
		params.Temperature = openai.Float(*t)
	}
	if req.MaxTokens <= 0 && p.sampling.MaxTokens > 0 {
		params.MaxTokens = openai.Int(int64(p.sampling.MaxTokens))
	}
	if req.MaxTokens <= 0 && p.sampling.MaxCompletionTokens > 0 {
		params.MaxCompletionTokens = openai.Int(int64(p.sampling.MaxCompletionTokens))
	}
	// Chat.Completions.NewStreaming, with the SDK's SSE decoder and stream
	// ([DONE], in-band errors) over our chatChunk instead of its
	// ChatCompletionChunk.
	var raw *http.Response
	err = p.client.Post(ctx, "chat/completions", params, &raw, option.WithJSONSet("stream", true))
	stream := ssestream.NewStream[chatChunk](ssestream.NewDecoder(raw), err)
	defer stream.Close()
	var acc chatAccumulator
	var reasoning []byte
	delivered := false
	for stream.Next() {
		chunk := stream.Current()
		acc.add(&chunk)
		for i := range chunk.Choices {
			ch := &chunk.Choices[i]
			if ch.Index != 0 {
				continue
			}
			d := Delta{Text: ch.Delta.Content, Reasoning: ch.reasoning()}
			if d.Text != "" || d.Reasoning != "" {
				reasoning = append(reasoning, d.Reasoning...)
				delivered = true
				onDelta(d)
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, openaiError(err, delivered)
	}
	if !acc.saw {
		return nil, &Error{Kind: "stream_broken", Partial: delivered, Err: errors.New("the stream ended without a choice")}
	}
	msg := Message{Role: RoleAssistant, Content: acc.content.String(), Reasoning: string(reasoning)}
	for i := range acc.toolCalls {
		tc := &acc.toolCalls[i]
		if tc.id == "" && tc.name.Len() == 0 && tc.arguments.Len() == 0 {
			continue // an index the stream skipped
		}
		args := json.RawMessage(tc.arguments.String())
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.id, Name: tc.name.String(), Args: args})
	}
	stop := acc.finish
	if stop == "" {
		// A stream that ends without finish_reason was cut short.
		return nil, &Error{Kind: "stream_broken", Partial: delivered, Err: errors.New("the stream ended before finish_reason")}
	}
	return &Response{Message: msg, StopReason: stop, Model: acc.model, Usage: Usage{
		InputTokens: acc.usage.PromptTokens, OutputTokens: acc.usage.CompletionTokens,
		CacheReadTokens: acc.usage.PromptTokensDetails.CachedTokens,
	}}, nil
}

func openaiError(err error, delivered bool) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return &Error{Kind: kindOfStatus(apiErr.StatusCode), Status: apiErr.StatusCode, Partial: delivered, Err: errors.New(http.StatusText(apiErr.StatusCode))}
	}
	kind := "unavailable"
	if delivered {
		kind = "stream_broken"
	}
	return &Error{Kind: kind, Partial: delivered, Err: err}
}

func openaiParams(req *Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{
		Model:         req.Model,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if req.MaxTokens > 0 {
		p.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
	}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	c := cmp.Or(req.Cache, &Cache{})
	msgs, err := c.encodedMessages("openai", req.Messages, func([]Message, int) int { return 1 }, func(m []Message) ([]byte, error) {
		u, err := openaiMessage(m[0])
		if err != nil {
			return nil, err
		}
		return u.MarshalJSON()
	})
	if err != nil {
		return p, err
	}
	p.Messages = append(p.Messages, overridden(msgs, param.Override[openai.ChatCompletionMessageParamUnion])...)
	tools, err := c.encodedTools("openai", req.Tools, func(t Tool) ([]byte, error) {
		u, err := openaiTool(t)
		if err != nil {
			return nil, err
		}
		return u.MarshalJSON()
	})
	if err != nil {
		return p, err
	}
	p.Tools = overridden(tools, param.Override[openai.ChatCompletionToolUnionParam])
	return p, nil
}

// openaiMessage is one message as the SDK's params.
func openaiMessage(m Message) (openai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case RoleUser:
		return openaiUser(m), nil
	case RoleTool:
		return openai.ToolMessage(m.Content, m.ToolCallID), nil
	case RoleAssistant:
		a := openai.ChatCompletionAssistantMessageParam{}
		if m.Content != "" {
			a.Content.OfString = openai.String(m.Content)
		}
		for _, tc := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: tc.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: string(tc.Args)}}})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	}
	return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("building request: unknown role %q", m.Role)
}

// openaiTool is one tool as the SDK's params.
func openaiTool(t Tool) (openai.ChatCompletionToolUnionParam, error) {
	schema, err := rawSchema(t.InputSchema)
	if err != nil {
		return openai.ChatCompletionToolUnionParam{}, fmt.Errorf("building request: schema of tool %s: %w", t.Name, err)
	}
	fd := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(schema)}
	if t.Description != "" {
		fd.Description = openai.String(t.Description)
	}
	return openai.ChatCompletionFunctionTool(fd), nil
}

// openaiUser is a user message: plain text, or content parts when it
// brings images (image_url) or PDFs (file) the model takes natively.
func openaiUser(m Message) openai.ChatCompletionMessageParamUnion {
	text := withNotes(m)
	var parts []openai.ChatCompletionContentPartUnionParam
	for _, a := range m.Attachments {
		switch {
		case a.IsImage():
			parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: a.dataURL()}))
		case a.IsPDF():
			parts = append(parts, openai.FileContentPart(openai.ChatCompletionContentPartFileFileParam{
				FileData: openai.String(a.dataURL()), Filename: openai.String(a.Name)}))
		}
	}
	if len(parts) == 0 {
		return openai.UserMessage(text)
	}
	return openai.UserMessage(append([]openai.ChatCompletionContentPartUnionParam{openai.TextContentPart(text)}, parts...))
}
