package deep

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
)

// endToolSpan sets the GenAI execute_tool attributes of one tool call (t
// is nil for a tool the model named but does not have) and ends span.
func endToolSpan(span trace.Span, tc llm.ToolCall, t *tool, res result) {
	if span.IsRecording() {
		// function: the agent runs it; extension: another service does.
		kind := "function"
		if t != nil && t.remote {
			kind = "extension"
		}
		span.SetAttributes(semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(tc.Name), semconv.GenAIToolType(kind),
			attribute.Bool("mirobody.tool.from_js", tc.ID == ""))
		if tc.ID != "" {
			span.SetAttributes(semconv.GenAIToolCallID(tc.ID))
		}
		if res.isError {
			span.SetStatus(codes.Error, res.kind)
			span.SetAttributes(semconv.ErrorTypeKey.String(res.kind))
		}
	}
	span.End()
}
