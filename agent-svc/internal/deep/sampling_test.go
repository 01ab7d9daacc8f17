package deep

import (
	"encoding/json"
	"testing"
)

// TestElicitation: only an elicitation/create request is a question for
// the user; its params go to the ask event as they are.
func TestElicitation(t *testing.T) {
	cases := []struct {
		name, raw, params string
		ok                bool
	}{
		{"elicitation", `{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object"}}}`,
			`{"message":"m","requestedSchema":{"type":"object"}}`, true},
		{"sampling", `{"method":"sampling/createMessage","params":{"messages":[]}}`, "", false},
		{"roots", `{"method":"roots/list"}`, "", false},
		{"not JSON", `{`, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			params, ok := elicitation(json.RawMessage(tc.raw))
			if ok != tc.ok || string(params) != tc.params {
				t.Fatalf("elicitation(%s) = %s, %v", tc.raw, params, ok)
			}
		})
	}
}
