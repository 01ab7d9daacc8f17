package builtin

import (
	"context"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Dimensions of convertible units.
const (
	dimMass      = "mass"
	dimLength    = "length"
	dimVolume    = "volume"
	dimTime      = "time"
	dimPressure  = "pressure"
	dimEnergy    = "energy"
	dimMassConc  = "mass concentration"
	dimMolarConc = "molar concentration"
	dimTemp      = "temperature"
)

// unit is a unit's dimension and its size in the dimension's base unit
// (g, m, L, s, kPa, kcal, g/L, mol/L; temperatures are handled apart).
type unit struct {
	dim    string
	factor float64
}

// unitTable holds the units normalize_unit knows, keyed by unitKey.
var unitTable = map[string]unit{
	"kg": {dimMass, 1000}, "g": {dimMass, 1}, "mg": {dimMass, 1e-3}, "ug": {dimMass, 1e-6}, "ng": {dimMass, 1e-9},
	"lb": {dimMass, 453.59237}, "oz": {dimMass, 28.349523125}, "st": {dimMass, 6350.29318},

	"km": {dimLength, 1000}, "m": {dimLength, 1}, "cm": {dimLength, 0.01}, "mm": {dimLength, 0.001},
	"in": {dimLength, 0.0254}, "ft": {dimLength, 0.3048}, "yd": {dimLength, 0.9144}, "mi": {dimLength, 1609.344},

	"l": {dimVolume, 1}, "dl": {dimVolume, 0.1}, "ml": {dimVolume, 1e-3}, "ul": {dimVolume, 1e-6},

	"ms": {dimTime, 1e-3}, "s": {dimTime, 1}, "min": {dimTime, 60}, "h": {dimTime, 3600}, "d": {dimTime, 86400},

	"kpa": {dimPressure, 1}, "mmhg": {dimPressure, 0.133322387415}, "cmh2o": {dimPressure, 0.0980665},

	"kcal": {dimEnergy, 1}, "cal": {dimEnergy, 1e-3}, "kj": {dimEnergy, 1 / 4.184}, "j": {dimEnergy, 1 / 4184.0},

	"g/l": {dimMassConc, 1}, "g/dl": {dimMassConc, 10}, "mg/ml": {dimMassConc, 1}, "mg/dl": {dimMassConc, 0.01},
	"mg/l": {dimMassConc, 1e-3}, "ug/ml": {dimMassConc, 1e-3}, "ug/dl": {dimMassConc, 1e-5}, "ug/l": {dimMassConc, 1e-6},
	"ng/ml": {dimMassConc, 1e-6}, "ng/dl": {dimMassConc, 1e-8}, "ng/l": {dimMassConc, 1e-9}, "pg/ml": {dimMassConc, 1e-9},

	"mol/l": {dimMolarConc, 1}, "mmol/l": {dimMolarConc, 1e-3}, "umol/l": {dimMolarConc, 1e-6},
	"nmol/l": {dimMolarConc, 1e-9}, "pmol/l": {dimMolarConc, 1e-12},
}

// unitSpellings maps common spellings to unitTable keys.
var unitSpellings = map[string]string{
	"mcg": "ug", "lbs": "lb", "pound": "lb", "pounds": "lb", "kilogram": "kg", "kilograms": "kg", "gram": "g", "grams": "g",
	"inch": "in", "inches": "in", "feet": "ft", "foot": "ft", "meter": "m", "metre": "m",
	"mm[hg]": "mmhg", "mmhg": "mmhg", "cm[h2o]": "cmh2o", "sec": "s", "hr": "h", "hour": "h", "hours": "h", "day": "d",
	"mcg/dl": "ug/dl", "mcg/l": "ug/l", "mcg/ml": "ug/ml",
	"c": "cel", "°c": "cel", "degc": "cel", "celsius": "cel", "f": "degf", "°f": "degf", "fahrenheit": "degf", "kelvin": "k",
}

// unitKey normalises a unit spelling: case, spaces, µ/μ and the common
// synonyms.
func unitKey(u string) string {
	k := strings.ToLower(strings.Join(strings.Fields(u), ""))
	k = strings.NewReplacer("µ", "u", "μ", "u").Replace(k)
	if s, ok := unitSpellings[k]; ok {
		k = s
	}
	return k
}

// toCelsius and fromCelsius convert temperatures (keys cel, degf, k).
var (
	toCelsius   = map[string]func(float64) float64{"cel": func(v float64) float64 { return v }, "degf": func(v float64) float64 { return (v - 32) * 5 / 9 }, "k": func(v float64) float64 { return v - 273.15 }}
	fromCelsius = map[string]func(float64) float64{"cel": func(v float64) float64 { return v }, "degf": func(v float64) float64 { return v*9/5 + 32 }, "k": func(v float64) float64 { return v + 273.15 }}
)

// Conversion is the result of normalize_unit.
type Conversion struct {
	Value     float64 `json:"value"`
	Unit      string  `json:"unit"`
	FromValue float64 `json:"from_value"`
	FromUnit  string  `json:"from_unit"`
	Indicator string  `json:"indicator,omitempty"`
	// MolarMass is the g/mol used for a mass/molar conversion.
	MolarMass float64 `json:"molar_mass,omitempty"`
}

// ConvertUnit converts value between units. A conversion between mass and
// molar concentration (for example glucose mg/dL to mmol/L) needs the
// indicator, whose molar mass comes from the shipped table.
func ConvertUnit(value float64, from, to, indicator string) (*Conversion, error) {
	res := &Conversion{FromValue: value, FromUnit: from, Unit: to}
	fk, tk := unitKey(from), unitKey(to)
	if c, ok := toCelsius[fk]; ok {
		back, ok := fromCelsius[tk]
		if !ok {
			return nil, Failf("cannot convert temperature %q to %q; use Cel, degF or K", from, to)
		}
		res.Value = round(back(c(value)))
		return res, nil
	}
	if fk == tk {
		res.Value = value
		return res, nil
	}
	fu, ok := unitTable[fk]
	if !ok {
		return nil, Failf("unknown unit %q; known units: %s", from, knownUnits())
	}
	tu, ok := unitTable[tk]
	if !ok {
		return nil, Failf("unknown unit %q; known units: %s", to, knownUnits())
	}
	if fu.dim == tu.dim {
		res.Value = round(value * fu.factor / tu.factor)
		return res, nil
	}
	molar := map[string]bool{fu.dim: true, tu.dim: true}
	if !molar[dimMassConc] || !molar[dimMolarConc] {
		return nil, Failf("cannot convert %s (%s) to %s (%s)", from, fu.dim, to, tu.dim)
	}
	if indicator == "" {
		return nil, Failf("converting %s to %s needs the indicator (for example glucose), for its molar mass", from, to)
	}
	in, ok := Indicators().Lookup(indicator)
	if !ok {
		return nil, Failf("no indicator named %q", indicator)
	}
	if in.MolarMass == 0 {
		return nil, Failf("%s has no molar mass in the table, so %s cannot be converted to %s", in.Name, from, to)
	}
	res.Indicator, res.MolarMass = in.Name, in.MolarMass
	base := value * fu.factor // g/L or mol/L
	if fu.dim == dimMassConc {
		base /= in.MolarMass
	} else {
		base *= in.MolarMass
	}
	res.Value = round(base / tu.factor)
	return res, nil
}

// round keeps 6 significant digits, which hides float noise such as
// 5.550000000001 and exceeds any lab's precision.
func round(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return v
	}
	return r
}

func knownUnits() string {
	var ks []string
	for k := range unitTable {
		ks = append(ks, k)
	}
	ks = append(ks, "cel", "degf", "k")
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// NormalizeUnit returns the normalize_unit tool (registry-svc/design.md "Built-in tools").
func NormalizeUnit() *Tool {
	return &Tool{
		Name: "normalize_unit",
		Description: "Convert a measurement between units: mass (kg, lb), length (cm, in), volume, time, pressure (mmHg, kPa), " +
			"energy (kcal, kJ), temperature (Cel, degF, K), mass concentrations (mg/dL, g/L, ng/mL, ...) and molar " +
			"concentrations (mmol/L, umol/L, ...). Converting between mass and molar concentration needs the indicator " +
			"(for example glucose mg/dL to mmol/L, cholesterol, triglycerides, creatinine µmol/L). Returns the converted value rounded to 6 significant digits.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"value":{"type":"number","description":"The value to convert."},` +
			`"from_unit":{"type":"string","description":"The value's unit, for example \"mg/dL\"."},` +
			`"to_unit":{"type":"string","description":"The wanted unit, for example \"mmol/L\"."},` +
			`"indicator":{"type":"string","description":"The indicator measured (name, alias or LOINC); required for mass/molar conversions."}},` +
			`"required":["value","from_unit","to_unit"],"additionalProperties":false}`),
		Annotations: json.RawMessage(`{"readOnlyHint":true,"openWorldHint":false}`),
		Call:        normalizeUnit,
	}
}

func normalizeUnit(_ context.Context, req *Request) (any, error) {
	var args struct {
		Value     float64 `json:"value"`
		FromUnit  string  `json:"from_unit"`
		ToUnit    string  `json:"to_unit"`
		Indicator string  `json:"indicator"`
	}
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	return ConvertUnit(args.Value, args.FromUnit, args.ToUnit, args.Indicator)
}
