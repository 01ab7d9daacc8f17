package builtin

import (
	"context"
	_ "embed"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// indicatorsCSV is the shipped table of common lab and vital indicators:
// canonical name, LOINC code, canonical unit (UCUM), category, molar mass
// in g/mol where a molar unit conversion applies, and aliases (English
// abbreviations and Chinese names) separated by "|".
//
//go:embed data/indicators.csv
var indicatorsCSV string

// Indicator is one entry of the shipped indicator table.
type Indicator struct {
	Name     string   `json:"name"`
	LOINC    string   `json:"loinc"`
	Unit     string   `json:"unit"`
	Category string   `json:"category"`
	Aliases  []string `json:"aliases"`
	// MolarMass (g/mol) allows mass/molar concentration conversions.
	MolarMass float64 `json:"molar_mass,omitempty"`
}

// Names returns every name the indicator is known by: canonical name,
// LOINC code and aliases.
func (in *Indicator) Names() []string {
	return append([]string{in.Name, in.LOINC}, in.Aliases...)
}

// IndicatorTable resolves names, aliases and LOINC codes.
type IndicatorTable struct {
	all    []*Indicator
	byName map[string]*Indicator
}

// parsedIndicators parses the embedded table on first use.
var parsedIndicators = sync.OnceValues(func() (*IndicatorTable, error) { return parseIndicators(indicatorsCSV) })

// Indicators returns the shipped table. It panics if the embedded file is
// malformed, which the package tests rule out.
func Indicators() *IndicatorTable {
	t, err := parsedIndicators()
	if err != nil {
		panic(err)
	}
	return t
}

func parseIndicators(data string) (*IndicatorTable, error) {
	recs, err := csv.NewReader(strings.NewReader(data)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("reading indicator table: %w", err)
	}
	t := &IndicatorTable{byName: map[string]*Indicator{}}
	for i, r := range recs[1:] {
		in := &Indicator{Name: r[0], LOINC: r[1], Unit: r[2], Category: r[3], Aliases: strings.Split(r[5], "|")}
		if r[4] != "" {
			if in.MolarMass, err = strconv.ParseFloat(r[4], 64); err != nil {
				return nil, fmt.Errorf("indicator table line %d: molar mass: %w", i+2, err)
			}
		}
		for _, n := range in.Names() {
			k := nameKey(n)
			if prev, dup := t.byName[k]; dup {
				return nil, fmt.Errorf("indicator table line %d: %q already names %s", i+2, n, prev.Name)
			}
			t.byName[k] = in
		}
		t.all = append(t.all, in)
	}
	return t, nil
}

// nameKey folds case and runs of spaces, so "heart  Rate" finds "Heart rate".
func nameKey(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// Lookup finds an indicator by name, alias or LOINC code.
func (t *IndicatorTable) Lookup(name string) (*Indicator, bool) {
	in, ok := t.byName[nameKey(name)]
	return in, ok
}

// All returns every indicator in table order.
func (t *IndicatorTable) All() []*Indicator { return t.all }

// Suggest returns up to n canonical names whose names contain name's key
// or are contained in it, for a helpful "not found".
func (t *IndicatorTable) Suggest(name string, n int) []string {
	k := nameKey(name)
	seen := map[string]bool{}
	var out []string
	for key, in := range t.byName {
		if k != "" && (strings.Contains(key, k) || (len(key) > 2 && strings.Contains(k, key))) && !seen[in.Name] {
			seen[in.Name] = true
			out = append(out, in.Name)
		}
	}
	sort.Strings(out)
	return out[:min(n, len(out))]
}

// ResolveIndicator returns the resolve_indicator tool (registry-svc/design.md "Built-in tools").
func ResolveIndicator() *Tool {
	return &Tool{
		Name: "resolve_indicator",
		Description: "Map a lab test or vital sign name, alias (English or Chinese, for example \"HbA1c\" or \"血糖\") " +
			"or LOINC code to its canonical indicator: canonical name, LOINC code, canonical unit, category and known aliases. " +
			"Use it before querying or comparing health data recorded under different names.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"name":{"type":"string","description":"An indicator name, alias or LOINC code, for example \"LDL\", \"谷丙转氨酶\" or \"2345-7\"."}},` +
			`"required":["name"],"additionalProperties":false}`),
		Annotations: json.RawMessage(`{"readOnlyHint":true,"openWorldHint":false}`),
		Call:        resolveIndicator,
	}
}

func resolveIndicator(_ context.Context, req *Request) (any, error) {
	var args struct {
		Name string `json:"name"`
	}
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	t := Indicators()
	in, ok := t.Lookup(args.Name)
	if !ok {
		if s := t.Suggest(args.Name, 5); len(s) > 0 {
			return nil, Failf("no indicator named %q; close matches: %s", args.Name, strings.Join(s, ", "))
		}
		return nil, Failf("no indicator named %q in the table of %d common labs and vitals", args.Name, len(t.All()))
	}
	return in, nil
}
