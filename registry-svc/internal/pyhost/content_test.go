package pyhost

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

func TestContentBlocks(t *testing.T) {
	p, found, _ := startPool(t, Options{Workers: 1}, "../../testdata/content")
	if names := names(found); strings.Contains(strings.Join(names, ","), "Image") {
		t.Errorf("an imported helper class became a tool: %v", names)
	}
	tests := []struct {
		tool string
		want string // the CallResponse as JSON
	}{
		{"image", `{"content":[{"type":"image","data":"iVBORw==","mimeType":"image/png"}]}`},
		{"audio_b64", `{"content":[{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"}]}`},
		{"resource_text", `{"content":[{"type":"resource","resource":{"uri":"test://r","mimeType":"text/plain","text":"hello"}}]}`},
		{"resource_blob", `{"content":[{"type":"resource","resource":{"uri":"test://b","blob":"AAE="}}]}`},
		{"link", `{"content":[{"type":"resource_link","uri":"file:///a.csv","name":"a.csv","mimeType":"text/csv","description":"The data."}]}`},
		{"mixed", `{"content":[{"type":"text","text":"Look:"},{"type":"image","data":"AQ==","mimeType":"image/gif"},` +
			`{"type":"resource","resource":{"uri":"test://m","text":"{}"}},{"type":"text","text":"{\"n\":1}"}],"structuredContent":{"result":[1,2]}}`},
		{"failed_content", `{"content":[{"type":"text","text":"no chart"},{"type":"image","data":"Ag==","mimeType":"image/png"}],"isError":true}`},
		{"bad_block", `{"content":[{"type":"text","text":"bad_block failed: TypeError: EmbeddedResource needs exactly one of text and blob"}],"isError":true}`},
		{"bad_structured", `{"content":[{"type":"text","text":"bad_structured failed: TypeError: mirobody.Content structured must be a dict or a list, not str"}],"isError":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			got, err := call(t, p, context.Background(), tt.tool, `{}`)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// progressEvent is one report received by a ProgressFunc.
type progressEvent struct {
	Progress, Total float64
	Message         string
}

func TestProgress(t *testing.T) {
	p, _, _ := startPool(t, Options{Workers: 1}, "../../testdata/content")
	tests := []struct {
		name, tool string
		want       bool // ask for progress
		text       string
		events     []progressEvent
		isError    bool
	}{
		{name: "sync", tool: "steps", want: true, text: "sent True",
			events: []progressEvent{{1, 3, "step 1"}, {2, 3, "step 2"}, {3, 3, "step 3"}}},
		{name: "async", tool: "steps_async", want: true, text: "sent True",
			events: []progressEvent{{10, 0, ""}, {20, 0, ""}, {30, 0, ""}}},
		{name: "not asked, sync", tool: "steps", text: "sent False"},
		{name: "not asked, async", tool: "steps_async", text: "sent False"},
		{name: "not a number", tool: "bad_progress", want: true, isError: true,
			text: "bad_progress failed: TypeError: mirobody.progress: progress must be a finite number, not 'half'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []progressEvent
			var report ProgressFunc
			if tt.want {
				report = func(progress, total float64, message string) {
					mu.Lock()
					got = append(got, progressEvent{progress, total, message})
					mu.Unlock()
				}
			}
			r, err := p.Call(context.Background(), tt.tool, json.RawMessage(`{}`), nil, report)
			if err != nil {
				t.Fatal(err)
			}
			var block struct{ Text string }
			if len(r.Content) != 1 || json.Unmarshal(r.Content[0], &block) != nil || block.Text != tt.text || r.IsError != tt.isError {
				t.Errorf("result %s isError=%v, want %q isError=%v", r.Content, r.IsError, tt.text, tt.isError)
			}
			// Every report arrives before Call returns.
			mu.Lock()
			defer mu.Unlock()
			if len(got) != len(tt.events) {
				t.Fatalf("progress %+v, want %+v", got, tt.events)
			}
			for i := range got {
				if got[i] != tt.events[i] {
					t.Errorf("progress %d = %+v, want %+v", i, got[i], tt.events[i])
				}
			}
		})
	}
}
