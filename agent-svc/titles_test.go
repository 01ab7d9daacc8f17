package agentsvc

import "testing"

func TestCleanTitle(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Glucose trend review", "Glucose trend review"},
		{"  \"Glucose trend review.\"  ", "Glucose trend review"},
		{"**Title: Iron and vitamin D**\nextra line", "Iron and vitamin D"},
		{"# Sleep   and\theart rate!", "Sleep and heart rate"},
		{"血糖变化趋势。", "血糖变化趋势"},
		{"", ""},
		{"A very long title that goes on and on well past the sixty characters a sidebar can show", "A very long title that goes on and on well past the sixty ch"},
	}
	for _, tt := range tests {
		if got := cleanTitle(tt.in); got != tt.want {
			t.Errorf("cleanTitle(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
