package builtin

import (
	"errors"
	"testing"
)

func TestConvertUnit(t *testing.T) {
	tests := []struct {
		value         float64
		from, to, ind string
		want          float64
		fail          bool
	}{
		{100, "mg/dL", "mmol/L", "glucose", 5.55074, false},
		{5.5, "mmol/L", "mg/dL", "血糖", 99.0858, false},
		{200, "mg/dL", "mmol/L", "Total cholesterol", 5.17264, false},
		{3.0, "mmol/L", "mg/dL", "LDL", 115.995, false},
		{150, "mg/dL", "mmol/L", "triglycerides", 1.69358, false},
		{1.0, "mg/dL", "umol/L", "creatinine", 88.4017, false},
		{88.4, "µmol/L", "mg/dL", "Cr", 0.999981, false},
		{30, "ng/mL", "nmol/L", "vitamin D", 74.8802, false},
		{1, "g/dL", "mg/dL", "", 1000, false},
		{70, "kg", "lb", "", 154.324, false},
		{6, "ft", "cm", "", 182.88, false},
		{37, "Cel", "degF", "", 98.6, false},
		{98.6, "°F", "C", "", 37, false},
		{0, "C", "K", "", 273.15, false},
		{120, "mmHg", "kPa", "", 15.9987, false},
		{1, "mcg", "ng", "", 1000, false},
		{5, "%", "%", "", 5, false},
		{100, "mg/dL", "mmol/L", "", 0, true},      // molar needs the indicator
		{100, "mg/dL", "mmol/L", "HbA1c", 0, true}, // no molar mass
		{1, "kg", "cm", "", 0, true},
		{1, "furlong", "m", "", 0, true},
		{1, "C", "kg", "", 0, true},
	}
	for _, tt := range tests {
		got, err := ConvertUnit(tt.value, tt.from, tt.to, tt.ind)
		if tt.fail {
			var te *ToolError
			if !errors.As(err, &te) {
				t.Errorf("%v %s→%s (%s): got %+v, %v; want a tool error", tt.value, tt.from, tt.to, tt.ind, got, err)
			}
			continue
		}
		if err != nil || got.Value != tt.want {
			t.Errorf("%v %s→%s (%s) = %+v, %v; want %v", tt.value, tt.from, tt.to, tt.ind, got, err, tt.want)
		}
	}
}
