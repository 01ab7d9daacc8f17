package llm

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestChatAccumulator(t *testing.T) {
	tests := []struct {
		name      string
		chunks    []string
		content   string
		calls     [][3]string // id, name, arguments
		finish    string
		usageIn   int64
		sawChoice bool
	}{
		{
			name: "text, then usage in a chunk without choices",
			chunks: []string{
				`{"id":"c","choices":[{"index":0,"delta":{"content":"Hel"}}]}`,
				`{"id":"c","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}`,
				`{"id":"c","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}}`,
			},
			content: "Hello", finish: "stop", usageIn: 7, sawChoice: true,
		},
		{
			name: "tool calls streamed in pieces, by index; other choices ignored",
			chunks: []string{
				`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","function":{"name":"write_","arguments":"{\"a\""}}]}}]}`,
				`{"id":"c","choices":[{"index":1,"delta":{"content":"other choice"}}]}`,
				`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"todos","arguments":":1}"}},{"index":2,"id":"call_c","function":{"name":"ls","arguments":""}}]}}]}`,
				`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":9999,"id":"x","function":{"name":"huge"}}]},"finish_reason":"tool_calls"}]}`,
			},
			calls:  [][3]string{{"call_a", "write_todos", `{"a":1}`}, {}, {"call_c", "ls", ""}},
			finish: "tool_calls", sawChoice: true,
		},
		{
			name:    "no choice at all",
			chunks:  []string{`{"id":"c","choices":[],"usage":{"prompt_tokens":1}}`},
			usageIn: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a chatAccumulator
			for _, c := range tt.chunks {
				var chunk chatChunk
				if err := json.Unmarshal([]byte(c), &chunk); err != nil {
					t.Fatal(err)
				}
				a.add(&chunk)
			}
			var calls [][3]string
			for i := range a.toolCalls {
				tc := &a.toolCalls[i]
				calls = append(calls, [3]string{tc.id, tc.name.String(), tc.arguments.String()})
			}
			if a.content.String() != tt.content || a.finish != tt.finish || a.usage.PromptTokens != tt.usageIn || a.saw != tt.sawChoice {
				t.Errorf("content %q finish %q usage %d saw %v; want %q %q %d %v",
					a.content.String(), a.finish, a.usage.PromptTokens, a.saw, tt.content, tt.finish, tt.usageIn, tt.sawChoice)
			}
			if !reflect.DeepEqual(calls, tt.calls) {
				t.Errorf("tool calls %q, want %q", calls, tt.calls)
			}
		})
	}
}
