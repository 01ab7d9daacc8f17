package jsrepl

import (
	"reflect"
	"sync"
	"time"

	"github.com/dlclark/regexp2"
	"github.com/dop251/goja"
)

// goja runs the regular expressions Go's regexp cannot (backreferences,
// lookaround) on regexp2, a backtracking engine: one match can take
// exponential time inside a single native call, which no interrupt stops.
// regexp2 ends a match at its Regexp's MatchTimeout, which goja neither
// sets nor exposes, so the guards (guards.js) call setMatchTimeout with
// the eval's time left before every exec and test, the two natives every
// other RegExp and String method matches through once exec is wrapped
// (design.md, "Regular expressions").

// defaultTimeout sets, once per process, the timeout regexp2 gives the
// patterns it compiles, for the one match setMatchTimeout cannot reach:
// the first match of a pattern Go's regexp runs, when it starts mid-string
// and goja compiles it for regexp2 on the spot.
var defaultTimeout sync.Once

func setDefaultMatchTimeout(d time.Duration) {
	defaultTimeout.Do(func() { regexp2.DefaultMatchTimeout = d })
}

var regexp2Type = reflect.TypeFor[*regexp2.Regexp]()

// setMatchTimeout sets the regexp2 match timeout of the RegExp o, when o
// is one and runs on regexp2, and reports whether it did. goja keeps the
// engine in unexported fields (Object.self → *regexpObject → pattern →
// regexp2Wrapper → rx), read here by reflection; a goja that moves them
// makes this report false, which TestRegexTimeoutReachesEngine catches.
// It runs on the runtime's goroutine, the only one using o's engine.
func setMatchTimeout(o *goja.Object, d time.Duration) bool {
	v := reflect.ValueOf(o).Elem().FieldByName("self")
	if !v.IsValid() || v.Kind() != reflect.Interface || v.IsNil() {
		return false
	}
	v = v.Elem()
	if v.Kind() != reflect.Pointer || v.Type().Elem().Name() != "regexpObject" {
		return false
	}
	for _, name := range []string{"pattern", "regexp2Wrapper", "rx"} {
		v = v.Elem().FieldByName(name)
		if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() {
			return false
		}
	}
	if v.Type() != regexp2Type {
		return false
	}
	(*regexp2.Regexp)(v.UnsafePointer()).MatchTimeout = max(d, time.Millisecond)
	return true
}

// regexGuard is the native the exec and test guards call with the RegExp
// they are about to run.
func regexGuard(cur func() *meter) func(goja.FunctionCall) goja.Value {
	return func(call goja.FunctionCall) goja.Value {
		o, ok := call.Argument(0).(*goja.Object)
		if m := cur(); ok && m != nil && !m.deadline.IsZero() {
			setMatchTimeout(o, time.Until(m.deadline))
		}
		return goja.Undefined()
	}
}
