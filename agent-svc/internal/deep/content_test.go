package deep

import (
	"encoding/json"
	"testing"

	"github.com/mirobody/mirobody-go/services/registry"
)

// Tool results reach the model as text; binary payloads are described,
// never pasted as base64.
func TestContentText(t *testing.T) {
	tests := []struct {
		name   string
		blocks []string
		sc     string
		want   string
	}{
		{"text", []string{`{"type":"text","text":"hi"}`}, "", "hi"},
		{"image", []string{`{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}`}, "", "[image image/png, 8 bytes, not shown]"},
		{"audio", []string{`{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"}`}, "", "[audio audio/wav, 4 bytes, not shown]"},
		{"text resource", []string{`{"type":"resource","resource":{"uri":"file:///a.txt","mimeType":"text/plain","text":"abc"}}`}, "", "[resource file:///a.txt]\nabc"},
		{"blob resource", []string{`{"type":"resource","resource":{"uri":"file:///a.bin","mimeType":"application/octet-stream","blob":"AAAA"}}`}, "", "[resource file:///a.bin application/octet-stream, 3 bytes, not shown]"},
		{"resource link", []string{`{"type":"resource_link","uri":"file:///b","name":"b"}`}, "", "[resource link b: file:///b]"},
		{"mixed", []string{`{"type":"text","text":"see"}`, `{"type":"image","data":"AAAA","mimeType":"image/gif"}`}, "", "see\n[image image/gif, 3 bytes, not shown]"},
		{"unknown block kept", []string{`{"type":"future","x":1}`}, "", `{"type":"future","x":1}`},
		{"structured only", nil, `{"a":1}`, `{"a":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &registry.CallResponse{StructuredContent: json.RawMessage(tt.sc)}
			for _, b := range tt.blocks {
				resp.Content = append(resp.Content, json.RawMessage(b))
			}
			if got := contentText(resp); got != tt.want {
				t.Errorf("contentText = %q, want %q", got, tt.want)
			}
		})
	}
}
