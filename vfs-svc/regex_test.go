package vfssvc

import (
	"context"
	"testing"

	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/wire"
)

// TestGrepPatternEquivalence checks the RE2 → ARE translation against the
// database itself: for every pattern and line, Postgres must match exactly
// when Go's RE2 does.
func TestGrepPatternEquivalence(t *testing.T) {
	db := servicetest.Postgres(t, nil)
	lines := []string{
		"", "abc", "a.c", "aXc", "ABC", "hello World", "HELLO", "foo bar", "foobar", "x foo",
		"3.14", "version 10.2.1", "colour", "color", "xx", "xxxx", "[brackets]", "$^ money",
		"café", "αβγ", "emoji 😀", "tab\there", "back\\slash", "a+b", "end.", "   ", "_under_", "100%",
	}
	patterns := []struct {
		pattern         string
		literal, ignore bool
	}{
		{"a.c", false, false}, {"^abc$", false, false}, {`\bfoo\b`, false, false}, {"[^a-z]+", false, false},
		{"colou?r", false, false}, {"x{2,3}", false, false}, {"^x{3}$", false, false}, {"(?i)hello", false, false},
		{"hello", false, true}, {"a|b|c", false, false}, {`\d+\.\d+`, false, false}, {"[[:alpha:]]+$", false, false},
		{`\s`, false, false}, {`^\W+$`, false, false}, {"(?:ab)*c", false, false}, {"a+?", false, false},
		{`[\[\]]`, false, false}, {`\$\^`, false, false}, {"é", false, false}, {"[α-ω]", false, false},
		{`\x{1F600}`, false, false}, {".*", false, false}, {"^$", false, false}, {`\.$`, false, false},
		{"a.c", true, false}, {"$^", true, false}, {"[brackets]", true, false}, {`back\slash`, true, false},
		{"a+b", true, false}, {"100%", true, false}, {"_", true, false}, {"ABC", true, true}, {`\t`, false, false},
		{"(a)(b)?c", false, false}, {"a{0,300}c", false, false}, {"^(foo|x foo)$", false, false}, {"[^\\s]{5,}", false, false},
	}
	ctx := context.Background()
	for _, p := range patterns {
		gp, err := compileGrep(p.pattern, p.literal, p.ignore)
		if err != nil {
			t.Errorf("%q: %v", p.pattern, err)
			continue
		}
		for _, line := range lines {
			var pg bool
			if err := db.Pool.QueryRow(ctx, `SELECT $1::text ~ $2`, line, gp.are).Scan(&pg); err != nil {
				t.Fatalf("%q as %q: %v", p.pattern, gp.are, err)
			}
			if re2 := gp.re2.MatchString(line); re2 != pg {
				t.Errorf("pattern %q (literal %v, ignore case %v) as %q on %q: RE2 %v, Postgres %v", p.pattern, p.literal, p.ignore, gp.are, line, re2, pg)
			}
		}
	}
	for _, bad := range []string{"(", `\pL+`, `\C`, "a{1001}"} {
		if _, err := compileGrep(bad, false, false); wire.CodeOf(err) != wire.InvalidArgument {
			t.Errorf("%q: got %v, want invalid_argument", bad, err)
		}
	}
}
