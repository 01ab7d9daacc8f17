package agentsvc

import (
	"context"
	"net/url"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
)

// genAISystem is gen_ai.system, the attribute the GenAI conventions
// before v1.37 used for gen_ai.provider.name; both are set, so that
// backends on either version group model calls by provider.
const genAISystem = attribute.Key("gen_ai.system")

// llmSpan describes the model calls of one resolved provider as client
// spans following the OpenTelemetry GenAI semantic conventions (design.md
// "Tracing").
type llmSpan struct {
	tracer trace.Tracer
	// attrs are the attributes every call of the provider has.
	attrs []attribute.KeyValue
}

// newLLMSpan returns the span maker of provider name (of type typ, at
// baseURL) asked for model.
func newLLMSpan(tracer trace.Tracer, name, typ, baseURL, model string) *llmSpan {
	provider := providerName(typ)
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(provider), genAISystem.String(provider),
		semconv.GenAIRequestModel(model), attribute.String("mirobody.llm.provider", name)}
	if u, err := url.Parse(baseURL); err == nil && u.Hostname() != "" {
		attrs = append(attrs, semconv.ServerAddress(u.Hostname()))
	}
	return &llmSpan{tracer: tracer, attrs: attrs}
}

// providerName is gen_ai.provider.name for a provider type.
func providerName(typ string) string {
	switch typ {
	case "anthropic":
		return semconv.GenAIProviderNameAnthropic.Value.AsString()
	case "google-genai":
		return semconv.GenAIProviderNameGCPGemini.Value.AsString()
	}
	return semconv.GenAIProviderNameOpenAI.Value.AsString()
}

// start opens the span of one call of model ("chat {model}").
func (s *llmSpan) start(ctx context.Context, model string, maxTokens int) (context.Context, trace.Span) {
	ctx, span := s.tracer.Start(ctx, "chat "+model, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		span.SetAttributes(s.attrs...)
		if maxTokens > 0 {
			span.SetAttributes(semconv.GenAIRequestMaxTokens(maxTokens))
		}
	}
	return ctx, span
}

// end closes span with the response's model, usage and finish reason, or
// the error's kind.
func (s *llmSpan) end(span trace.Span, model, stop string, usage llm.Usage, err error) {
	if span.IsRecording() {
		if err != nil {
			kind := errorKind(err)
			span.SetStatus(codes.Error, kind)
			span.SetAttributes(semconv.ErrorTypeKey.String(kind))
		} else {
			span.SetAttributes(semconv.GenAIUsageInputTokens(int(usage.InputTokens)), semconv.GenAIUsageOutputTokens(int(usage.OutputTokens)),
				semconv.GenAIResponseFinishReasons(stop))
			if model != "" {
				span.SetAttributes(semconv.GenAIResponseModel(model))
			}
		}
	}
	span.End()
}

// tracedProvider records each Stream of next as a span.
type tracedProvider struct {
	next llm.Provider
	s    *llmSpan
}

// Stream implements llm.Provider.
func (p *tracedProvider) Stream(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	ctx, span := p.s.start(ctx, req.Model, req.MaxTokens)
	resp, err := p.next.Stream(ctx, req, onDelta)
	var r llm.Response
	if resp != nil {
		r = *resp
	}
	p.s.end(span, r.Model, r.StopReason, r.Usage, err)
	return resp, err
}

// tracedMCPProvider records each StreamMCP of next (a whole Base turn, the
// provider running the tool loop) as one span: the provider's own model
// calls inside it are not visible to us; the tool calls it makes reach our
// /mcp as traces of their own.
type tracedMCPProvider struct {
	next llm.MCPProvider
	s    *llmSpan
}

// StreamMCP implements llm.MCPProvider.
func (p *tracedMCPProvider) StreamMCP(ctx context.Context, req *llm.MCPRequest, onEvent func(llm.MCPEvent)) (*llm.MCPResponse, error) {
	ctx, span := p.s.start(ctx, req.Model, req.MaxTokens)
	resp, err := p.next.StreamMCP(ctx, req, onEvent)
	var r llm.MCPResponse
	if resp != nil {
		r = *resp
	}
	p.s.end(span, r.Model, r.StopReason, r.Usage, err)
	return resp, err
}
