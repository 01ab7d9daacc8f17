package llm

import (
	"strings"

	"github.com/openai/openai-go/v3"
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
	usage     openai.CompletionUsage
	model     string // the model that answered, for the span (design.md "Tracing")
}

// accToolCall is one tool call being streamed.
type accToolCall struct {
	id        string
	name      strings.Builder
	arguments strings.Builder
}

// add takes in one chunk. Like the SDK's accumulator, name and argument
// pieces are concatenated in order, and the first id given wins.
func (a *chatAccumulator) add(chunk *openai.ChatCompletionChunk) {
	if chunk.JSON.Usage.Valid() {
		a.usage = chunk.Usage
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
