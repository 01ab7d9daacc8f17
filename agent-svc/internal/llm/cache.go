package llm

import (
	"bytes"
	"encoding/json"
)

// Cache keeps the encoded tools and messages of one conversation between
// its model calls, so that a step encodes only what it added: the SDK
// encodes each tool and each message once, and later requests carry those
// bytes as raw JSON (the SDKs' param.Override), which the SDK copies
// instead of walking the params by reflection again. What is cached is
// checked against the request (cheap: unchanged strings share their
// bytes), so a changed history (summarization, a resumed turn) is
// re-encoded from the first difference. The zero value is ready; a Cache
// is not safe for concurrent use.
type Cache struct {
	format   string
	tools    []Tool
	toolsRaw []json.RawMessage
	msgs     []cachedMessage
}

// cachedMessage is one API message and the neutral messages it encodes.
type cachedMessage struct {
	src []Message
	raw json.RawMessage
}

// reset empties c unless it last encoded for format.
func (c *Cache) reset(format string) {
	if c.format != format {
		*c = Cache{format: format}
	}
}

// encodedTools returns the raw JSON of each tool as encode writes it.
func (c *Cache) encodedTools(format string, tools []Tool, encode func(Tool) ([]byte, error)) ([]json.RawMessage, error) {
	c.reset(format)
	if len(tools) == len(c.tools) && sameTools(tools, c.tools) {
		return c.toolsRaw, nil
	}
	raws := make([]json.RawMessage, len(tools))
	for i, t := range tools {
		b, err := encode(t)
		if err != nil {
			return nil, err
		}
		raws[i] = b
	}
	c.tools, c.toolsRaw = tools, raws
	return raws, nil
}

// encodedMessages returns the raw JSON of each API message of msgs: span
// says how many neutral messages from msgs[i] one API message takes, and
// encode writes it.
func (c *Cache) encodedMessages(format string, msgs []Message, span func(msgs []Message, i int) int, encode func([]Message) ([]byte, error)) ([]json.RawMessage, error) {
	c.reset(format)
	var out []json.RawMessage
	k := 0
	for i := 0; i < len(msgs); k++ {
		src := msgs[i : i+span(msgs, i)]
		i += len(src)
		if k < len(c.msgs) && sameMessages(src, c.msgs[k].src) {
			out = append(out, c.msgs[k].raw)
			continue
		}
		c.msgs = c.msgs[:min(k, len(c.msgs))]
		raw, err := encode(src)
		if err != nil {
			c.msgs = c.msgs[:k]
			return nil, err
		}
		// The caller may change its slice's messages in place; keep copies.
		c.msgs = append(c.msgs, cachedMessage{src: append([]Message(nil), src...), raw: raw})
		out = append(out, raw)
	}
	c.msgs = c.msgs[:k]
	return out, nil
}

func sameTools(a, b []Tool) bool {
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Description != b[i].Description || !bytes.Equal(a[i].InputSchema, b[i].InputSchema) {
			return false
		}
	}
	return true
}

func sameMessages(a, b []Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameMessage(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

// sameMessage compares every field of Message (TestSameMessageFields
// fails when Message gains one).
func sameMessage(a, b *Message) bool {
	if a.Role != b.Role || a.Content != b.Content || a.Reasoning != b.Reasoning || a.ToolCallID != b.ToolCallID ||
		a.ToolName != b.ToolName || a.IsError != b.IsError || len(a.ToolCalls) != len(b.ToolCalls) || len(a.Attachments) != len(b.Attachments) {
		return false
	}
	for i, tc := range a.ToolCalls {
		if u := b.ToolCalls[i]; tc.ID != u.ID || tc.Name != u.Name || !sameBytes(tc.Args, u.Args) {
			return false
		}
	}
	for i, at := range a.Attachments {
		if u := b.Attachments[i]; at.Name != u.Name || at.Type != u.Type || at.Path != u.Path || at.Text != u.Text || !sameBytes(at.Data, u.Data) {
			return false
		}
	}
	return true
}

// sameBytes is bytes.Equal that also tells nil from empty (an attachment
// without Data does not travel natively).
func sameBytes(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

// overridden wraps each of raws as an SDK param through override (an
// instance of the SDK's param.Override), so that the SDK writes the bytes
// as they are: the one loop both providers' request builders share.
// None gives nil, as before, so an empty list stays omitted from the body.
func overridden[T any](raws []json.RawMessage, override func(any) T) []T {
	if len(raws) == 0 {
		return nil
	}
	out := make([]T, len(raws))
	for i, raw := range raws {
		out[i] = override(raw)
	}
	return out
}
