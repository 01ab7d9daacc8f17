package llm

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// Attachment is a file of a user message. Path names it in the session's
// filesystem; Data (an image or a PDF) and Text (a text file) hold its
// content for the turn that brought it and are never saved, so a replayed
// message carries only a note naming Path, which read_file reads.
type Attachment struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Path string `json:"path"`
	Data []byte `json:"-"`
	Text string `json:"-"`
}

// IsImage reports whether a provider takes the attachment as an image.
func (a Attachment) IsImage() bool { return a.Data != nil && strings.HasPrefix(a.Type, "image/") }

// IsPDF reports whether a provider takes the attachment as a document.
func (a Attachment) IsPDF() bool { return a.Data != nil && a.Type == "application/pdf" }

// dataURL is the attachment's bytes as a data: URL.
func (a Attachment) dataURL() string {
	return "data:" + a.Type + ";base64," + a.base64()
}

func (a Attachment) base64() string { return base64.StdEncoding.EncodeToString(a.Data) }

// textPart is how an attachment that does not travel natively reaches the
// model: its text when the turn loaded it, else a note naming its file.
func (a Attachment) textPart() string {
	if a.Text != "" {
		return fmt.Sprintf("Attached file %s (%s, stored at %s):\n<<<\n%s\n>>>", a.Name, a.Type, a.Path, a.Text)
	}
	return fmt.Sprintf("[Attached file %s (%s), stored at %s; read it with read_file.]", a.Name, a.Type, a.Path)
}

// withNotes is a user message's text followed by notes for the
// attachments that do not travel natively.
func withNotes(m Message) string {
	parts := []string{m.Content}
	for _, a := range m.Attachments {
		if !a.IsImage() && !a.IsPDF() {
			parts = append(parts, a.textPart())
		}
	}
	return strings.Join(parts, "\n\n")
}
