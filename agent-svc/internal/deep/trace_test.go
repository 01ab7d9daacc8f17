package deep

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mirobody/mirobody-go/agent-svc/internal/jsrepl"
	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/agent-svc/internal/turn"
	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/servicetest"
)

// TestToolSpans: each tool call of a turn is an execute_tool span, a child
// of the turn's span, and a subagent's tool calls are children of the task
// span.
func TestToolSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	srv := scripted.New(scripted.Sequence(
		scripted.Step{Calls: []scripted.Call{{ID: "c1", Name: "write_todos", Args: todo}, {ID: "c2", Name: "task", Args: `{"description":"plan"}`}}},
		scripted.Step{Calls: []scripted.Call{{ID: "s1", Name: "write_todos", Args: todo}}},
		scripted.Step{Text: "sub done"},
		scripted.Step{Calls: []scripted.Call{{ID: "c3", Name: "js_eval", Args: `{"code":"console.log(1)"}`}, {ID: "c4", Name: "nope", Args: `{}`}}},
		scripted.Step{Text: "done"}))
	t.Cleanup(srv.Close)
	a := New(Options{Log: servicetest.Logger(t), Tracer: tp.Tracer("test"), REPL: jsrepl.NewStore(jsrepl.Options{Log: servicetest.Logger(t)})})
	ctx, root := tp.Tracer("test").Start(context.Background(), "turn")
	out, err := a.Run(ctx, &turn.Turn{AccountID: "a", SessionID: "s", Question: "q", Model: "m",
		Provider: llm.NewOpenAI(llm.ClientOptions{BaseURL: srv.OpenAIBaseURL(), APIKey: "k"}), Emit: func(agent.Event) {}})
	root.End()
	if err != nil || out.Finish != agent.FinishStop {
		t.Fatalf("turn: %+v %v", out, err)
	}
	byCall := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		for _, a := range s.Attributes() {
			if a.Key == "gen_ai.tool.call.id" {
				byCall[a.Value.AsString()] = s
			}
		}
	}
	tests := []struct {
		call, name, parent string
		errType            string
	}{
		{"c1", "execute_tool write_todos", "turn", ""},
		{"c2", "execute_tool task", "turn", ""},
		{"s1", "execute_tool write_todos", "c2", ""},
		{"c3", "execute_tool js_eval", "turn", ""},
		{"c4", "execute_tool nope", "turn", "not_found"},
	}
	for _, tt := range tests {
		s, ok := byCall[tt.call]
		if !ok {
			t.Errorf("no span for call %s", tt.call)
			continue
		}
		wantParent := root.SpanContext().SpanID()
		if tt.parent != "turn" {
			wantParent = byCall[tt.parent].SpanContext().SpanID()
		}
		attrs := map[attribute.Key]string{}
		for _, a := range s.Attributes() {
			attrs[a.Key] = a.Value.Emit()
		}
		if s.Name() != tt.name || s.Parent().SpanID() != wantParent || attrs["gen_ai.operation.name"] != "execute_tool" ||
			attrs["error.type"] != tt.errType || attrs["gen_ai.tool.type"] != "function" {
			t.Errorf("call %s: span %s parent %s attrs %v; want %s under %s, error.type %q", tt.call, s.Name(), s.Parent().SpanID(), attrs, tt.name, tt.parent, tt.errType)
		}
	}
}
