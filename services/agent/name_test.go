package agent

import (
	"testing"

	"github.com/mirobody/mirobody-go/services/wire"
)

func TestNormalize(t *testing.T) {
	cases := map[string]Name{"": "deep", "Deep": "deep", "BASE": "base", "Baseline": "base"}
	for in, want := range cases {
		if got, err := Normalize(in, "deep"); err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if got, err := Normalize("", " Base "); err != nil || got != AgentBase {
		t.Errorf("Normalize with default Base = %q, %v", got, err)
	}
	if _, err := Normalize("other", "deep"); !wire.IsCode(err, wire.InvalidArgument) {
		t.Errorf("unknown agent: %v", err)
	}
}

// TestValid: an agent claim or a visibility profile has one spelling.
func TestValid(t *testing.T) {
	for _, tt := range []struct {
		n    Name
		want bool
	}{{AgentDeep, true}, {AgentBase, true}, {AgentNone, false}, {"BASE", false}, {"baseline", false}} {
		if got := tt.n.Valid(); got != tt.want {
			t.Errorf("Name(%q).Valid() = %v, want %v", tt.n, got, tt.want)
		}
	}
}
