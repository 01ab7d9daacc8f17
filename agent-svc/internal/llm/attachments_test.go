package llm

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAttachmentParams: each API gets images and PDFs in its own content
// part types and text files as text; a replayed message (no bytes) gets a
// note naming the file instead.
func TestAttachmentParams(t *testing.T) {
	live := Message{Role: RoleUser, Content: "read these", Attachments: []Attachment{
		{Name: "r.pdf", Type: "application/pdf", Path: "/attachments/r.pdf", Data: []byte("%PDF-1")},
		{Name: "p.png", Type: "image/png", Path: "/attachments/p.png", Data: []byte("png")},
		{Name: "n.csv", Type: "text/csv", Path: "/attachments/n.csv", Text: "a,b"},
	}}
	replayed := live
	replayed.Attachments = []Attachment{{Name: "r.pdf", Type: "application/pdf", Path: "/attachments/r.pdf"}}
	mustJSON := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	oa, err := openaiParams(&Request{Model: "m", Messages: []Message{replayed, {Role: RoleAssistant, Content: "ok"}, live}})
	if err != nil {
		t.Fatal(err)
	}
	an, err := anthropicParams(&Request{Model: "m", Messages: []Message{replayed, {Role: RoleAssistant, Content: "ok"}, live}})
	if err != nil {
		t.Fatal(err)
	}
	rs := responsesParams(&MCPRequest{Model: "m", Messages: []Message{replayed, {Role: RoleAssistant, Content: "ok"}, live}})
	am := anthropicMCPParams(&MCPRequest{Model: "m", Messages: []Message{replayed, {Role: RoleAssistant, Content: "ok"}, live}})
	tests := []struct {
		name string
		got  string
		want []string
	}{
		{"chat completions", mustJSON(oa), []string{
			`{"content":"read these\n\n[Attached file r.pdf (application/pdf), stored at /attachments/r.pdf; read it with read_file.]","role":"user"}`,
			`{"file":{"file_data":"data:application/pdf;base64,JVBERi0x","filename":"r.pdf"},"type":"file"}`,
			`{"image_url":{"url":"data:image/png;base64,cG5n"},"type":"image_url"}`,
			`Attached file n.csv (text/csv, stored at /attachments/n.csv):\n\u003c\u003c\u003c\na,b`}},
		{"messages", mustJSON(an), []string{
			`{"source":{"data":"JVBERi0x","media_type":"application/pdf","type":"base64"},"title":"r.pdf","type":"document"}`,
			`{"source":{"data":"cG5n","media_type":"image/png","type":"base64"},"type":"image"}`,
			`read it with read_file.]`}},
		{"messages with the MCP connector", mustJSON(am), []string{
			`{"source":{"data":"JVBERi0x","media_type":"application/pdf","type":"base64"},"title":"r.pdf","type":"document"}`,
			`{"source":{"data":"cG5n","media_type":"image/png","type":"base64"},"type":"image"}`,
			`read it with read_file.]`}},
		{"responses", mustJSON(rs), []string{
			`{"file_data":"data:application/pdf;base64,JVBERi0x","filename":"r.pdf","type":"input_file"}`,
			`{"detail":"auto","image_url":"data:image/png;base64,cG5n","type":"input_image"}`,
			`read it with read_file.]`}},
	}
	for _, tt := range tests {
		for _, w := range tt.want {
			if !strings.Contains(tt.got, w) {
				t.Errorf("%s: the request lacks %s:\n%s", tt.name, w, tt.got)
			}
		}
	}
	if b, _ := json.Marshal(live); strings.Contains(string(b), "JVBERi0x") || strings.Contains(string(b), "a,b") {
		t.Errorf("a saved message keeps the attachment's content: %s", b)
	}
}
