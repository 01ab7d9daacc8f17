package llm

import (
	"encoding/json"
	"testing"
)

func TestBaseErrorText(t *testing.T) {
	cases := map[string]string{
		``:          "",
		`null`:      "",
		`"refused"`: "refused",
		`{"type":"mcp_protocol_error","code":-32602,"message":"unknown tool"}`:                                  "unknown tool",
		`{"type":"mcp_tool_execution_error","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`: "a\nb",
		`{"type":"http_error","code":401}`:                                                                      `{"type":"http_error","code":401}`,
	}
	for raw, want := range cases {
		if got := errorText(raw); got != want {
			t.Errorf("errorText(%s) = %q, want %q", raw, got, want)
		}
	}
}

// A call the provider never answered still gets a result in the history,
// and calls between two texts form one assistant message.
func TestBaseTranscriptShape(t *testing.T) {
	var tr mcpTranscript
	var seen int
	on := func(MCPEvent) { seen++ }
	tr.record(MCPEvent{Text: "a"}, on)
	tr.record(MCPEvent{Call: &ToolCall{ID: "1", Name: "x", Args: json.RawMessage(`{}`)}}, on)
	tr.record(MCPEvent{Result: &ToolResult{CallID: "1", Content: "r1"}}, on)
	tr.record(MCPEvent{Call: &ToolCall{ID: "2", Name: "y", Args: json.RawMessage(`{}`)}}, on)
	tr.record(MCPEvent{Text: "b"}, on)
	msgs := tr.finish()
	if seen != 5 || len(msgs) != 4 || len(msgs[0].ToolCalls) != 2 || msgs[0].Content != "a" || msgs[1].ToolName != "x" || msgs[1].Content != "r1" ||
		msgs[2].ToolCallID != "2" || !msgs[2].IsError || msgs[3].Content != "b" {
		b, _ := json.Marshal(msgs)
		t.Fatalf("messages %s", b)
	}
}
