package agentsvc

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
)

// TestLLMSpans: every model call, of the Deep agent (Chat Completions,
// Anthropic Messages) and of the Base agent (Responses and Anthropic with
// the provider running MCP tools), is a client span "chat {model}" with
// the GenAI attributes; a failed call has error.type.
func TestLLMSpans(t *testing.T) {
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		if r.LastUser() == "fail" {
			return scripted.Step{Fault: &scripted.Fault{Status: 400}}, nil
		}
		return scripted.Step{Text: "hello", InputTokens: 11, OutputTokens: 7}, nil
	})
	t.Cleanup(srv.Close)
	mcpSrv := servicetest.NewMCPServer(t, servicetest.MCPServerOptions{})
	cfg := &conf.Config{ProviderRetries: -1}
	entries := func(typOA string) map[string]conf.Provider {
		return map[string]conf.Provider{"oa": {Type: typOA, Model: "gpt-test", BaseURL: srv.OpenAIBaseURL()},
			"an": {Type: "anthropic", Model: "claude-test", BaseURL: srv.AnthropicBaseURL()}}
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	sets := map[agent.Name]*providerSet{agent.AgentDeep: newProviderSet(cfg, agent.AgentDeep, entries("openai")),
		agent.AgentBase: newProviderSet(cfg, agent.AgentBase, entries("openai-responses"))}
	for _, ps := range sets {
		ps.tracer = tp.Tracer("test")
	}
	tests := []struct {
		agent    agent.Name
		provider string
		question string
		system   string
		model    string
		errType  string
	}{
		{agent.AgentDeep, "oa", "hi", "openai", "gpt-test", ""},
		{agent.AgentDeep, "an", "hi", "anthropic", "claude-test", ""},
		{agent.AgentDeep, "oa", "fail", "openai", "gpt-test", "bad_request"},
		{agent.AgentBase, "oa", "hi", "openai", "gpt-test", ""},
		{agent.AgentBase, "an", "hi", "anthropic", "claude-test", ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.agent)+"/"+tt.provider+"/"+tt.question, func(t *testing.T) {
			p, err := sets[tt.agent].resolve(tt.provider, "")
			if err != nil {
				t.Fatal(err)
			}
			ctx, parent := tp.Tracer("test").Start(context.Background(), "turn")
			msgs := []llm.Message{{Role: llm.RoleUser, Content: tt.question}}
			if p.remote != nil {
				_, err = p.remote.StreamMCP(ctx, &llm.MCPRequest{Model: p.model, Messages: msgs, Server: llm.MCPServer{Label: "m", URL: mcpSrv.URL}}, func(llm.MCPEvent) {})
			} else {
				_, err = p.provider.Stream(ctx, &llm.Request{Model: p.model, Messages: msgs}, func(llm.Delta) {})
			}
			parent.End()
			if (err != nil) != (tt.errType != "") {
				t.Fatalf("call: %v", err)
			}
			var span sdktrace.ReadOnlySpan
			for _, s := range rec.Ended() {
				if s.Parent().SpanID() == parent.SpanContext().SpanID() {
					span = s
				}
			}
			if span == nil {
				t.Fatal("no model call span under the turn")
			}
			attrs := map[attribute.Key]string{}
			for _, a := range span.Attributes() {
				attrs[a.Key] = a.Value.Emit()
			}
			want := map[attribute.Key]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": tt.system, "gen_ai.system": tt.system,
				"gen_ai.request.model": tt.model, "server.address": "127.0.0.1", "error.type": tt.errType}
			if tt.errType == "" {
				want["gen_ai.response.model"] = tt.model
				want["gen_ai.usage.input_tokens"] = "11"
				want["gen_ai.usage.output_tokens"] = "7"
				want["gen_ai.response.finish_reasons"] = `["stop"]`
			}
			for k, v := range want {
				if attrs[k] != v {
					t.Errorf("%s = %q, want %q (all: %v)", k, attrs[k], v, attrs)
				}
			}
			if span.Name() != "chat "+tt.model || span.SpanKind() != trace.SpanKindClient {
				t.Errorf("span %q kind %s, want chat %s, client", span.Name(), span.SpanKind(), tt.model)
			}
		})
	}
}
