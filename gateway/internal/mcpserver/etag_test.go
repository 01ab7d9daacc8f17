package mcpserver

import "testing"

func TestNoneMatchHits(t *testing.T) {
	tests := []struct {
		header, etag string
		want         bool
	}{
		{`"abc"`, `"abc"`, true},
		{`W/"abc"`, `"abc"`, true},
		{`"x", "abc"`, `"abc"`, true},
		{`*`, `"abc"`, true},
		{`"abcd"`, `"abc"`, false},
		{``, `"abc"`, false},
		{`*`, ``, false},
	}
	for _, tt := range tests {
		if got := noneMatchHits(tt.header, tt.etag); got != tt.want {
			t.Errorf("noneMatchHits(%q, %q) = %v, want %v", tt.header, tt.etag, got, tt.want)
		}
	}
}
