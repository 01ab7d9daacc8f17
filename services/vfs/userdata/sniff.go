package userdata

import (
	"net/http"
	"strings"
)

// SniffBytes is how much of an upload NotText looks at.
const SniffBytes = 512

// NotText returns the media type of an upload's first bytes (up to
// SniffBytes) when they are not text: a PDF, an image, a zip or xlsx.
// Every import format is text; parsed as CSV, such a file would only yield
// one line error per "line" of binary. It returns "" for text.
func NotText(head []byte) string {
	ct := http.DetectContentType(head)
	if strings.HasPrefix(ct, "text/") {
		return ""
	}
	kind, _, _ := strings.Cut(ct, ";")
	return kind
}
