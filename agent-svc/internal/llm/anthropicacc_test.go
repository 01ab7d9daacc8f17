package llm

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestAnthropicAccumulator(t *testing.T) {
	tests := []struct {
		name   string
		events []string
		want   Message
		usage  Usage
		stop   string
		err    bool
	}{
		{
			name: "thinking, text and a tool call in pieces; message_delta's totals replace message_start's",
			events: []string{
				`{"type":"message_start","message":{"model":"claude-x","usage":{"input_tokens":100,"output_tokens":1,"cache_read_input_tokens":7}}}`,
				`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"s"}}`,
				`{"type":"content_block_stop","index":0}`,
				`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":"He"}}`,
				`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"llo"}}`,
				`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t1","name":"ls","input":{}}}`,
				`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"p\":"}}`,
				`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"1}"}}`,
				`{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"t2","name":"glob","input":{}}}`,
				`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":20,"cache_read_input_tokens":9}}`,
				`{"type":"message_stop"}`,
			},
			want: Message{Role: RoleAssistant, Content: "Hello", Reasoning: "hm", ToolCalls: []ToolCall{
				{ID: "t1", Name: "ls", Args: json.RawMessage(`{"p":1}`)}, {ID: "t2", Name: "glob", Args: json.RawMessage(`{}`)}}},
			usage: Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 9},
			stop:  "tool_use",
		},
		{
			name:   "a block that does not start in order",
			events: []string{`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`},
			err:    true,
		},
		{
			name:   "a delta for a block that never started",
			events: []string{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`},
			err:    true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a anthropicAccumulator
			var err error
			for _, e := range tt.events {
				var ev anthropicEvent
				if err := json.Unmarshal([]byte(e), &ev); err != nil {
					t.Fatal(err)
				}
				if err = a.add(&ev); err != nil {
					break
				}
			}
			if tt.err {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := a.message(); !reflect.DeepEqual(got, tt.want) || a.usage != tt.usage || a.stop != tt.stop || a.model != "claude-x" {
				t.Errorf("got %+v usage %+v stop %q model %q; want %+v %+v %q", got, a.usage, a.stop, a.model, tt.want, tt.usage, tt.stop)
			}
		})
	}
}
