package llm

import (
	"encoding/json"
	"fmt"
	"strings"
)

// anthropicEvent is what the loop reads of a Messages stream event.
// Decoded with encoding/json, it costs a fraction of anthropic-sdk-go's
// MessageStreamEventUnion (apijson keeps every field's raw JSON), and
// Message.Accumulate re-encodes each finished block into its raw JSON
// (design.md "Provider clients").
type anthropicEvent struct {
	Type    string `json:"type"`
	Index   int64  `json:"index"`
	Message struct {
		Model string         `json:"model"`
		Usage anthropicUsage `json:"usage"`
	} `json:"message"`
	ContentBlock struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Thinking string          `json:"thinking"`
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Input    json.RawMessage `json:"input"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage anthropicUsage `json:"usage"`
}

// anthropicUsage holds counts that may be absent (nil): message_delta's
// counts are whole-message totals that replace the ones given so far.
type anthropicUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
}

// anthropicAccumulator gathers what the loop needs from a Messages
// stream, as Message.Accumulate does: the text, thinking and tool_use
// blocks, the stop reason, the usage and the model.
type anthropicAccumulator struct {
	model  string
	stop   string
	usage  Usage
	blocks []anthropicBlock
}

type anthropicBlock struct {
	typ      string
	id, name string
	text     strings.Builder
	input    []byte
}

// add takes in one event.
func (a *anthropicAccumulator) add(ev *anthropicEvent) error {
	switch ev.Type {
	case "message_start":
		a.model = ev.Message.Model
		a.usage = Usage{}
		a.setUsage(&ev.Message.Usage)
	case "message_delta":
		a.stop = ev.Delta.StopReason
		a.setUsage(&ev.Usage)
	case "content_block_start":
		// Blocks start in index order with no gaps.
		if ev.Index != int64(len(a.blocks)) {
			return fmt.Errorf("received event of type %s for content block at index %d, expected index %d", ev.Type, ev.Index, len(a.blocks))
		}
		cb := &ev.ContentBlock
		a.blocks = append(a.blocks, anthropicBlock{typ: cb.Type, id: cb.ID, name: cb.Name, input: cb.Input})
		b := &a.blocks[len(a.blocks)-1]
		b.text.WriteString(cb.Text)
		b.text.WriteString(cb.Thinking)
	case "content_block_delta":
		if ev.Index < 0 || ev.Index >= int64(len(a.blocks)) {
			return fmt.Errorf("received event of type %s for content block at index %d, but only %d blocks started", ev.Type, ev.Index, len(a.blocks))
		}
		b := &a.blocks[ev.Index]
		switch ev.Delta.Type {
		case "text_delta":
			b.text.WriteString(ev.Delta.Text)
		case "thinking_delta":
			b.text.WriteString(ev.Delta.Thinking)
		case "input_json_delta":
			if ev.Delta.PartialJSON != "" {
				if string(b.input) == "{}" {
					b.input = nil
				}
				b.input = append(b.input, ev.Delta.PartialJSON...)
			}
		}
	}
	return nil
}

func (a *anthropicAccumulator) setUsage(u *anthropicUsage) {
	for _, f := range []struct {
		from *int64
		to   *int64
	}{
		{u.InputTokens, &a.usage.InputTokens}, {u.OutputTokens, &a.usage.OutputTokens},
		{u.CacheReadInputTokens, &a.usage.CacheReadTokens}, {u.CacheCreationInputTokens, &a.usage.CacheWriteTokens},
	} {
		if f.from != nil {
			*f.to = *f.from
		}
	}
}

// message is the accumulated answer.
func (a *anthropicAccumulator) message() Message {
	msg := Message{Role: RoleAssistant}
	for i := range a.blocks {
		b := &a.blocks[i]
		switch b.typ {
		case "text":
			msg.Content += b.text.String()
		case "thinking":
			msg.Reasoning += b.text.String()
		case "tool_use":
			args := json.RawMessage(b.input)
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: b.id, Name: b.name, Args: args})
		}
	}
	return msg
}
