package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

func TestIndicatorTable(t *testing.T) {
	tab, err := parseIndicators(indicatorsCSV)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tab.All()); n < 150 {
		t.Errorf("table has %d indicators, want at least 150", n)
	}
	loinc := regexp.MustCompile(`^[0-9]{1,6}-[0-9]$`)
	chinese := 0
	for _, in := range tab.All() {
		if !loinc.MatchString(in.LOINC) {
			t.Errorf("%s: LOINC %q is malformed", in.Name, in.LOINC)
		}
		if in.Unit == "" || in.Category == "" || len(in.Aliases) == 0 {
			t.Errorf("%s: missing unit, category or aliases", in.Name)
		}
		if loincCheckDigit(in.LOINC) {
			continue
		}
		t.Errorf("%s: LOINC %s fails its mod 10 check digit", in.Name, in.LOINC)
	}
	for _, in := range tab.All() {
		for _, a := range in.Aliases {
			if strings.IndexFunc(a, func(r rune) bool { return unicode.Is(unicode.Han, r) }) >= 0 {
				chinese++
				break
			}
		}
	}
	if chinese < 150 {
		t.Errorf("only %d indicators have a Chinese name", chinese)
	}
}

// loincCheckDigit verifies a LOINC code's mod 10 check digit (the Luhn
// algorithm over the digits before the hyphen).
func loincCheckDigit(code string) bool {
	body, check, _ := strings.Cut(code, "-")
	sum := 0
	double := true
	for i := len(body) - 1; i >= 0; i-- {
		d := int(body[i] - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return check == string(rune('0'+(10-sum%10)%10))
}

func TestResolveIndicator(t *testing.T) {
	tests := []struct {
		name, want, loinc string
		fail              bool
	}{
		{"glucose", "Glucose", "2345-7", false},
		{"血糖", "Glucose", "2345-7", false},
		{"  hba1C ", "Hemoglobin A1c", "4548-4", false},
		{"2093-3", "Total cholesterol", "2093-3", false},
		{"谷丙转氨酶", "Alanine aminotransferase", "1742-6", false},
		{"LDL-C", "LDL cholesterol", "2089-1", false},
		{"SpO2", "Oxygen saturation", "59408-5", false},
		{"no such thing", "", "", true},
		{"cholest", "", "", true},
	}
	for _, tt := range tests {
		args, _ := json.Marshal(map[string]string{"name": tt.name})
		v, err := resolveIndicator(context.Background(), &Request{Args: args})
		if tt.fail {
			var te *ToolError
			if !errors.As(err, &te) {
				t.Errorf("%q: got %v, want a tool error", tt.name, err)
			}
			continue
		}
		in, ok := v.(*Indicator)
		if err != nil || !ok || in.Name != tt.want || in.LOINC != tt.loinc {
			t.Errorf("%q: got %+v, %v", tt.name, v, err)
		}
	}
	_, err := resolveIndicator(context.Background(), &Request{Args: json.RawMessage(`{"name":"cholest"}`)})
	if err == nil || !strings.Contains(err.Error(), "HDL cholesterol") {
		t.Errorf("suggestions: %v", err)
	}
}
