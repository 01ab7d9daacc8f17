package llm

import (
	"encoding/json"
	"strings"
)

// maxToolCallIndex bounds the tool call indices a stream may use, so that
// a hostile index cannot make the accumulator allocate without limit.
const maxToolCallIndex = 128

// chatAccumulator gathers what the loop needs from a Chat Completions
// stream: the first choice's text, tool calls and finish reason, and the
// usage. openai-go's ChatCompletionAccumulator does this and much more
// (every choice, logprobs, refusal, a full ChatCompletion), and was 43% of
// the Deep loop's allocations per step (design.md "Provider streams").
type chatAccumulator struct {
	saw       bool // a chunk carried choice 0
	content   strings.Builder
	toolCalls []accToolCall
	finish    string
	usage     chatUsage
	model     string // the model that answered, for the span (design.md "Tracing")
}

// chatChunk is what the loop reads of a Chat Completions stream chunk.
// Decoded with encoding/json, it costs a fraction of openai-go's
// ChatCompletionChunk, which keeps every field's raw JSON and unknown
// members (design.md "Provider clients").
type chatChunk struct {
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *chatUsage   `json:"usage"`
}

type chatChoice struct {
	Index        int64  `json:"index"`
	FinishReason string `json:"finish_reason"`
	Delta        struct {
		Content string `json:"content"`
		// reasoning_content and reasoning are not part of the OpenAI
		// schema, but DeepSeek, vLLM and OpenRouter stream them; kept raw
		// so that a value that is not a string is skipped, not an error.
		ReasoningContent json.RawMessage `json:"reasoning_content"`
		Reasoning        json.RawMessage `json:"reasoning"`
		ToolCalls        []struct {
			Index    int64  `json:"index"`
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"delta"`
}

// reasoning is the choice's reasoning text, from either member.
func (c *chatChoice) reasoning() string {
	var out string
	for _, raw := range []json.RawMessage{c.Delta.ReasoningContent, c.Delta.Reasoning} {
		var s string
		if len(raw) > 0 && json.Unmarshal(raw, &s) == nil {
			out += s
		}
	}
	return out
}

type chatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// accToolCall is one tool call being streamed.
type accToolCall struct {
	id        string
	name      strings.Builder
	arguments strings.Builder
}

// add takes in one chunk. Like the SDK's accumulator, name and argument
// pieces are concatenated in order, and the first id given wins.
func (a *chatAccumulator) add(chunk *chatChunk) {
	if chunk.Usage != nil {
		a.usage = *chunk.Usage
	}
	if a.model == "" {
		a.model = chunk.Model
	}
	for i := range chunk.Choices {
		ch := &chunk.Choices[i]
		if ch.Index != 0 {
			continue
		}
		a.saw = true
		a.content.WriteString(ch.Delta.Content)
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
		}
		for _, tc := range ch.Delta.ToolCalls {
			if tc.Index < 0 || tc.Index >= maxToolCallIndex {
				continue
			}
			for int64(len(a.toolCalls)) <= tc.Index {
				a.toolCalls = append(a.toolCalls, accToolCall{})
			}
			t := &a.toolCalls[tc.Index]
			if t.id == "" {
				t.id = tc.ID
			}
			t.name.WriteString(tc.Function.Name)
			t.arguments.WriteString(tc.Function.Arguments)
		}
	}
}
