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

// Upstream's other agent names run the default agent, with a notice.
func TestOrDefault(t *testing.T) {
	cases := []struct {
		in, def string
		kind    Name
		notice  string
	}{
		{"Mix", "deep", AgentDeep, `agent "Mix" is not available here; the deep agent answers instead`},
		{"rtc", "base", AgentBase, `agent "rtc" is not available here; the base agent answers instead`},
		{"Baseline", "deep", AgentBase, ""},
		{"", "base", AgentBase, ""},
	}
	for _, c := range cases {
		if kind, notice := OrDefault(c.in, c.def); kind != c.kind || notice != c.notice {
			t.Errorf("OrDefault(%q, %q) = %q, %q; want %q, %q", c.in, c.def, kind, notice, c.kind, c.notice)
		}
	}
}
