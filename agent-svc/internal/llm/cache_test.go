package llm

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// cacheConversation is a conversation with every kind of message.
func cacheConversation() []Message {
	return []Message{
		{Role: RoleUser, Content: "look <here> & there", Attachments: []Attachment{
			{Name: "a.png", Type: "image/png", Path: "/a.png", Data: []byte{1, 2, 3}},
			{Name: "b.pdf", Type: "application/pdf", Path: "/b.pdf", Data: []byte("%PDF")},
			{Name: "c.txt", Type: "text/plain", Path: "/c.txt", Text: "notes"},
		}},
		{Role: RoleAssistant, Content: "Let me look.", ToolCalls: []ToolCall{
			{ID: "c1", Name: "lookup", Args: json.RawMessage(`{"q":"x"}`)},
			{ID: "c2", Name: "lookup", Args: json.RawMessage(`{"q": "y"}`)},
		}},
		{Role: RoleTool, ToolCallID: "c1", ToolName: "lookup", Content: "1"},
		{Role: RoleTool, ToolCallID: "c2", ToolName: "lookup", Content: "no", IsError: true},
		{Role: RoleAssistant},
		{Role: RoleUser, Content: "and now?"},
	}
}

var cacheTools = []Tool{
	{Name: "lookup", Description: "Look up", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false,"$defs":{"x":{"type":"string"}}}`)},
	{Name: "bare", InputSchema: json.RawMessage(`{"type":"object"}`)},
}

// TestCachedParamsMatchSDK checks that a request built from cached raw
// JSON is the SDK's own encoding, cold, warm, and after the history changed
// under the cache: byte for byte for OpenAI; for Anthropic as JSON, as its
// SDK writes a schema's extra members in map order.
func TestCachedParamsMatchSDK(t *testing.T) {
	openaiDirect := func(req *Request) []byte {
		p, err := openaiParams(&Request{Model: req.Model, System: req.System})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range req.Messages {
			u, err := openaiMessage(m)
			if err != nil {
				t.Fatal(err)
			}
			p.Messages = append(p.Messages, u)
		}
		for _, tl := range req.Tools {
			u, err := openaiTool(tl)
			if err != nil {
				t.Fatal(err)
			}
			p.Tools = append(p.Tools, u)
		}
		return marshal(t, p)
	}
	anthropicDirect := func(req *Request) []byte {
		p, err := anthropicParams(&Request{Model: req.Model, System: req.System})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(req.Messages); {
			n := anthropicSpan(req.Messages, i)
			m, err := anthropicMessage(req.Messages[i : i+n])
			if err != nil {
				t.Fatal(err)
			}
			p.Messages = append(p.Messages, m)
			i += n
		}
		for _, tl := range req.Tools {
			u, err := anthropicTool(tl)
			if err != nil {
				t.Fatal(err)
			}
			p.Tools = append(p.Tools, u)
		}
		return marshal(t, p)
	}
	cached := map[string]func(*Request) []byte{
		"openai": func(req *Request) []byte {
			p, err := openaiParams(req)
			if err != nil {
				t.Fatal(err)
			}
			return marshal(t, p)
		},
		"anthropic": func(req *Request) []byte {
			p, err := anthropicParams(req)
			if err != nil {
				t.Fatal(err)
			}
			return marshal(t, p)
		},
	}
	direct := map[string]func(*Request) []byte{"openai": openaiDirect, "anthropic": anthropicDirect}
	for name, build := range cached {
		t.Run(name, func(t *testing.T) {
			conv := cacheConversation()
			req := &Request{Model: "m", System: "be brief", Tools: cacheTools, Cache: &Cache{}}
			check := func(what string) {
				t.Helper()
				got, want := build(req), direct[name](req)
				if name == "openai" && string(got) == string(want) || name == "anthropic" && sameJSON(t, got, want) {
					return
				}
				t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
			}
			for n := 1; n <= len(conv); n++ {
				req.Messages = conv[:n]
				check(fmt.Sprint("step ", n))
			}
			// Summarization replaces the start; a resumed turn may edit a
			// message in place.
			req.Messages = append([]Message{{Role: RoleUser, Content: "summary"}}, conv[4:]...)
			check("summarized")
			req.Messages[1].Content = "edited"
			check("edited in place")
			req.Tools = cacheTools[:1]
			check("fewer tools")
			req.Cache = nil
			check("no cache")
		})
	}
}

func marshal(t *testing.T, v json.Marshaler) []byte {
	t.Helper()
	b, err := v.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

// TestSameMessageFields fails when a message type gains a field that
// sameMessage does not compare.
func TestSameMessageFields(t *testing.T) {
	for typ, n := range map[reflect.Type]int{
		reflect.TypeFor[Message]():    8,
		reflect.TypeFor[ToolCall]():   3,
		reflect.TypeFor[Attachment](): 5,
	} {
		if typ.NumField() != n {
			t.Errorf("%s has %d fields, sameMessage compares %d", typ, typ.NumField(), n)
		}
	}
}
