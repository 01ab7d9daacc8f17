package mcpserver

import "testing"

func TestSkillBody(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"frontmatter", "---\nname: a\ndescription: b\n---\nDo it.\n", "Do it."},
		{"byte order mark", "\ufeff---\nname: a\n---\n\nDo it.", "Do it."},
		{"no frontmatter", "# Title\nDo it.\n", "# Title\nDo it."},
		{"unclosed frontmatter", "---\nname: a\nDo it.", "---\nname: a\nDo it."},
		{"rule in the body", "---\nname: a\n---\nOne\n---\nTwo", "One\n---\nTwo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := skillBody(tt.doc); got != tt.want {
				t.Errorf("skillBody(%q) = %q, want %q", tt.doc, got, tt.want)
			}
		})
	}
}
