package httpobs

import (
	"net/http"
	"testing"
)

func TestStatusAndMethodLabels(t *testing.T) {
	tests := []struct {
		code   int
		method string
		status string
		label  string
	}{
		{0, http.MethodGet, "2xx", "GET"},
		{204, http.MethodDelete, "2xx", "DELETE"},
		{304, http.MethodPost, "3xx", "POST"},
		{404, "PROPFIND", "4xx", "other"},
		{503, "get", "5xx", "other"},
	}
	for _, tt := range tests {
		if got := statusClass(tt.code); got != tt.status {
			t.Errorf("statusClass(%d) = %s, want %s", tt.code, got, tt.status)
		}
		if got := methodLabel(tt.method); got != tt.label {
			t.Errorf("methodLabel(%s) = %s, want %s", tt.method, got, tt.label)
		}
	}
}
