package mcpserver

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRequestState(t *testing.T) {
	keys, _, err := sessionKeys([]string{testSecret}, "")
	must(t, err)
	s, err := newSealer(keys, time.Hour)
	must(t, err)
	now := time.Unix(1_800_000_000, 0)
	s.now = func() time.Time { return now }
	answers := map[string]json.RawMessage{"step1": json.RawMessage(`{"action":"accept"}`)}
	st := s.sealState(inputState{Account: "a", Tool: "greet", Answers: answers})
	session := s.seal(session{Version: latestLegacy, Account: "a"})
	tests := []struct {
		name, state, account, tool string
		at                         time.Time
		ok                         bool
	}{
		{"as sealed", st, "a", "greet", now, true},
		{"tampered", st + "-TAMPERED", "a", "greet", now, false},
		{"flipped", st[:len(st)-2] + strings.Repeat("A", 2), "a", "greet", now, false},
		{"other account", st, "b", "greet", now, false},
		{"anonymous", st, "", "greet", now, false},
		{"other tool", st, "a", "other", now, false},
		{"the prompt of the tool's name", st, "a", promptStateName("greet"), now, false},
		{"expired", st, "a", "greet", now.Add(time.Hour + time.Second), false},
		{"a session id is no state", session, "a", "greet", now, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.now = func() time.Time { return tt.at }
			got, err := s.openState(tt.state, tt.account, tt.tool)
			if (err == nil) != tt.ok {
				t.Fatalf("open: err %v, want ok %v", err, tt.ok)
			}
			if tt.ok && string(got.Answers["step1"]) != `{"action":"accept"}` {
				t.Errorf("answers %s", got.Answers)
			}
		})
	}
	s.now = func() time.Time { return now }
	if _, err := s.open(st, "a"); err == nil {
		t.Error("a request state opened as a session")
	}
}

func TestCapabilityNames(t *testing.T) {
	tests := []struct {
		caps string
		want []string
	}{
		{`{"elicitation":{},"sampling":{},"roots":{"listChanged":true}}`, []string{"elicitation", "sampling", "roots"}},
		{`{"sampling":{},"experimental":{}}`, []string{"sampling"}},
		{`{"elicitation":null}`, nil},
		{`{}`, nil},
		{`[]`, nil},
		{``, nil},
	}
	for _, tt := range tests {
		if got := capabilityNames(json.RawMessage(tt.caps)); !slices.Equal(got, tt.want) {
			t.Errorf("capabilityNames(%s) = %v, want %v", tt.caps, got, tt.want)
		}
	}
}
