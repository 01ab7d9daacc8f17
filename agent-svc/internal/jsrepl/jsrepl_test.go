package jsrepl

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/servicetest"
)

func call(_ context.Context, name string, args json.RawMessage) (string, error) {
	switch name {
	case "double":
		var a struct{ N int }
		_ = json.Unmarshal(args, &a)
		b, _ := json.Marshal(map[string]int{"n": a.N * 2})
		return string(b), nil
	case "list":
		return `[1,2,3]`, nil
	}
	return "", errors.New("tool " + name + " failed: boom")
}

func TestEval(t *testing.T) {
	s := NewStore(Options{Timeout: time.Second, MaxToolCalls: 3, MaxOutput: 200, Log: servicetest.Logger(t)})
	tools := []string{"double", "list", "broken"}
	cases := []struct {
		name, code, out, err string
	}{
		{"state set", "var counter = 41; function inc() { return ++counter }", "", ""},
		{"state kept", "inc()", "=> 42", ""},
		{"console", `console.log("hi", {a: 1}, [2])`, "hi {\"a\":1} [2]", ""},
		{"promise all and loop", `const [a, b] = await Promise.all([tools.double({n: 2}), tools.double({n: 5})]);
			let sum = 0; for (const x of await tools.list()) sum += x; return a.n + b.n + sum`, "=> 20", ""},
		{"tool error is an exception", `try { await tools.broken({}) } catch (e) { return "caught " + e.message }`, "=> caught tool broken failed: boom", ""},
		{"uncaught tool error", `await tools.broken({})`, "", "boom"},
		{"tool budget", `for (let i = 0; i < 5; i++) await tools.list()`, "", "budget of 3"},
		{"infinite loop", `while (true) {}`, "", "time budget"},
		{"infinite loop after await", `await tools.list(); while (true) {}`, "", "time budget"},
		{"state survives interrupt", "counter", "=> 42", ""},
		{"output cap", `for (let i = 0; i < 100; i++) console.log("0123456789")`, "output truncated", ""},
		{"no require", `typeof require + typeof process + typeof fetch + typeof XMLHttpRequest + typeof Deno`, "=> undefinedundefinedundefinedundefinedundefined", ""},
		{"syntax error", `let = ;`, "", "SyntaxError"},
		{"result whose conversions throw", `({toJSON() { throw 1 }, toString() { throw 2 }})`, "=> [a value whose toString failed]", ""},
		{"exception whose toString throws", `throw {toString() { throw 1 }}`, "", "[a value whose toString failed]"},
		{"deep recursion", `function f(n) { return [n].map(x => f(x + 1)) } f(0)`, "", "RangeError"},
		{"an allocation loop meets the time budget first", `let a = []; while (true) a.push("x".repeat(10))`, "", "time budget"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := s.Eval(context.Background(), &EvalRequest{Session: "s1", Code: tc.code, Tools: tools, Call: call})
			if !strings.Contains(res.Output, tc.out) || (tc.err == "" && res.Error != "") || !strings.Contains(res.Error, tc.err) {
				t.Fatalf("output %q error %q; want output containing %q, error containing %q", res.Output, res.Error, tc.out, tc.err)
			}
		})
	}
	if res := s.Eval(context.Background(), &EvalRequest{Session: "s2", Code: "typeof counter"}); res.Output != "=> undefined\n" || !res.Fresh {
		t.Fatalf("sessions share state: %+v", res)
	}
}

func TestTTLAndDrop(t *testing.T) {
	s := NewStore(Options{TTL: time.Minute, Log: servicetest.Logger(t)})
	now := time.Now()
	s.now = func() time.Time { return now }
	s.Eval(context.Background(), &EvalRequest{Session: "a", Code: "var x = 1"})
	now = now.Add(2 * time.Minute)
	if res := s.Eval(context.Background(), &EvalRequest{Session: "a", Code: "typeof x"}); !res.Fresh || res.Output != "=> undefined\n" {
		t.Fatalf("expired state kept: %+v", res)
	}
	s.Drop("a")
	if s.Has("a") {
		t.Fatal("dropped state kept")
	}
}

func TestMain(m *testing.M) { servicetest.Main(m) }
