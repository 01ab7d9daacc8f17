package vfssvc

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"

	"github.com/mirobody/mirobody-go/services/wire"
)

// maxClassRanges bounds the ranges of one character class; bigger classes
// (\pL and friends) would make a huge Postgres pattern.
const maxClassRanges = 256

// grepPattern is a grep pattern in both dialects: RE2 for Go (the mount)
// and the equivalent Postgres ARE for the database, prefixed with the
// newline-sensitive flag so that `.`, `^` and `$` behave per line.
type grepPattern struct {
	re2 *regexp.Regexp
	are string
}

// compileGrep parses an RE2 (or literal) pattern and translates it to a
// Postgres ARE with the same set of matching lines. The translation walks
// RE2's syntax tree, so the pattern has RE2's meaning even where the two
// dialects' syntaxes differ; constructs ARE cannot express are
// invalid_argument.
func compileGrep(pattern string, literal, ignoreCase bool) (*grepPattern, error) {
	if pattern == "" {
		return nil, wire.Errorf(wire.InvalidArgument, "grep pattern is empty")
	}
	if literal {
		pattern = regexp.QuoteMeta(pattern)
	}
	goSrc := pattern
	flags := "(?n)"
	if ignoreCase {
		goSrc, flags = "(?i)"+pattern, "(?ni)"
	}
	re2, err := regexp.Compile(goSrc)
	if err != nil {
		return nil, wire.Errorf(wire.InvalidArgument, "grep pattern: %v", err)
	}
	tree, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, wire.Errorf(wire.InvalidArgument, "grep pattern: %v", err)
	}
	var b strings.Builder
	b.WriteString(flags)
	// Simplify also expands counted repetitions (x{2,3} → xx(?:x)?), which
	// sidesteps Postgres's smaller repetition limit.
	if err := renderARE(&b, tree.Simplify()); err != nil {
		return nil, wire.Errorf(wire.InvalidArgument, "grep pattern: %v", err)
	}
	return &grepPattern{re2: re2, are: b.String()}, nil
}

// renderARE writes re in Postgres ARE syntax. Lines never contain a
// newline (nor NUL, which Postgres text cannot hold), so both are dropped
// from character classes: a class can then not match across lines when the
// whole file is tested.
func renderARE(b *strings.Builder, re *syntax.Regexp) error {
	switch re.Op {
	case syntax.OpNoMatch:
		return fmt.Errorf("the pattern can never match")
	case syntax.OpEmptyMatch:
		b.WriteString("(?:)")
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && unicode.SimpleFold(r) != r {
				b.WriteByte('[')
				for f := r; ; {
					writeRune(b, f)
					if f = unicode.SimpleFold(f); f == r {
						break
					}
				}
				b.WriteByte(']')
				continue
			}
			writeRune(b, r)
		}
	case syntax.OpCharClass:
		if len(re.Rune)/2 > maxClassRanges {
			return fmt.Errorf("character class %s is too large", re)
		}
		b.WriteByte('[')
		n := 0
		for i := 0; i < len(re.Rune); i += 2 {
			lo, hi := max(re.Rune[i], 1), re.Rune[i+1] // text never holds NUL
			if hi < lo {
				continue
			}
			if lo <= '\n' && '\n' <= hi {
				if lo < '\n' {
					writeRange(b, lo, '\n'-1)
					n++
				}
				if hi > '\n' {
					writeRange(b, '\n'+1, hi)
					n++
				}
				continue
			}
			writeRange(b, lo, hi)
			n++
		}
		if n == 0 {
			return fmt.Errorf("character class matches only a newline")
		}
		b.WriteByte(']')
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		b.WriteByte('.')
	case syntax.OpBeginLine, syntax.OpBeginText:
		b.WriteByte('^')
	case syntax.OpEndLine, syntax.OpEndText:
		b.WriteByte('$')
	case syntax.OpWordBoundary:
		b.WriteString(`\y`)
	case syntax.OpNoWordBoundary:
		b.WriteString(`\Y`)
	case syntax.OpCapture:
		return renderGroup(b, re.Sub[0])
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		if err := renderGroup(b, re.Sub[0]); err != nil {
			return err
		}
		b.WriteString(map[syntax.Op]string{syntax.OpStar: "*", syntax.OpPlus: "+", syntax.OpQuest: "?"}[re.Op])
		if re.Flags&syntax.NonGreedy != 0 {
			b.WriteByte('?')
		}
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if err := renderARE(b, s); err != nil {
				return err
			}
		}
	case syntax.OpAlternate:
		b.WriteString("(?:")
		for i, s := range re.Sub {
			if i > 0 {
				b.WriteByte('|')
			}
			if err := renderARE(b, s); err != nil {
				return err
			}
		}
		b.WriteByte(')')
	default:
		return fmt.Errorf("unsupported construct %s", re)
	}
	return nil
}

func renderGroup(b *strings.Builder, re *syntax.Regexp) error {
	b.WriteString("(?:")
	if err := renderARE(b, re); err != nil {
		return err
	}
	b.WriteByte(')')
	return nil
}

func writeRange(b *strings.Builder, lo, hi rune) {
	writeRune(b, lo)
	if hi != lo {
		b.WriteByte('-')
		writeRune(b, hi)
	}
}

// writeRune writes ASCII letters and digits as themselves and everything
// else as a \u or \U escape, which means the same inside and outside
// brackets, so no character is ever special.
func writeRune(b *strings.Builder, r rune) {
	switch {
	case r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r)):
		b.WriteRune(r)
	case r <= 0xFFFF:
		fmt.Fprintf(b, `\u%04x`, r)
	default:
		fmt.Fprintf(b, `\U%08x`, r)
	}
}
