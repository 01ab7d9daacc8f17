package attach

import (
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/services/wire"
)

var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

func TestCheck(t *testing.T) {
	types := []string{"image/png", "application/pdf", "text/csv", "text/plain"}
	limits := Limits{MaxBytes: 100, MaxFiles: 2, Types: types}
	tests := []struct {
		name     string
		in       []File
		limits   Limits
		want     string // part of the error; "" for none
		wantName string
		wantType string
	}{
		{"a PDF by its extension", []File{{Name: "report.pdf", Data: []byte("%PDF-1.4\n")}}, limits, "", "report.pdf", "application/pdf"},
		{"type parameters dropped", []File{{Name: "a.csv", Type: "text/csv; charset=utf-8", Data: []byte("a,b\n")}}, limits, "", "a.csv", "text/csv"},
		{"a path keeps its base name", []File{{Name: `..\..\etc/pass<wd>.txt`, Data: []byte("x")}}, limits, "", "pass_wd_.txt", "text/plain"},
		{"hidden names lose their dots", []File{{Name: "..env.txt", Data: []byte("x")}}, limits, "", "env.txt", "text/plain"},
		{"no name", []File{{Name: "..", Data: []byte("x")}}, limits, "needs a file name", "", ""},
		{"empty", []File{{Name: "a.txt"}}, limits, "is empty", "", ""},
		{"too large", []File{{Name: "a.txt", Data: []byte(strings.Repeat("a", 101))}}, limits, "CHAT_ATTACHMENT_MAX_BYTES", "", ""},
		{"the NATS payload bounds the size", []File{{Name: "a.txt", Data: []byte(strings.Repeat("a", 90))}}, Limits{MaxBytes: 100, MaxFiles: 2, Types: types, MaxPayload: envelope + 100}, "CHAT_ATTACHMENT_MAX_BYTES", "", ""},
		{"too many", []File{{Name: "a.txt", Data: []byte("a")}, {Name: "b.txt", Data: []byte("b")}, {Name: "c.txt", Data: []byte("c")}}, limits, "CHAT_ATTACHMENT_MAX_FILES", "", ""},
		{"same name twice", []File{{Name: "a.txt", Data: []byte("a")}, {Name: "x/a.txt", Data: []byte("b")}}, limits, "two attachments are named", "", ""},
		{"a type chat does not take", []File{{Name: "a.zip", Data: []byte("PK\x03\x04")}}, limits, "CHAT_ATTACHMENT_TYPES", "", ""},
		{"a PDF that is not one", []File{{Name: "a.pdf", Data: []byte("hello")}}, limits, "is not a PDF", "", ""},
		{"an image that is not one", []File{{Name: "a.png", Data: []byte("%PDF-1.4")}}, limits, "is not a image/png image", "", ""},
		{"a PNG", []File{{Name: "a.png", Data: pngBytes}}, limits, "", "a.png", "image/png"},
		{"text that is not UTF-8", []File{{Name: "a.txt", Data: []byte{0xff, 0xfe}}}, limits, "not UTF-8 text", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.in, tt.limits)
			if tt.want != "" {
				if wire.CodeOf(err) != wire.InvalidArgument || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Check = %v, want invalid_argument naming %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.in[0].Name != tt.wantName || tt.in[0].Type != tt.wantType {
				t.Errorf("checked %q %q, want %q %q", tt.in[0].Name, tt.in[0].Type, tt.wantName, tt.wantType)
			}
		})
	}
}
