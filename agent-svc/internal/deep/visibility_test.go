package deep

import (
	"context"
	"slices"
	"testing"

	"github.com/mirobody/mirobody-go/agent-svc/internal/turn"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/servicetest"
)

// The agent's own tools obey ALLOWED_TOOLS_DEEP and DISALLOWED_TOOLS_DEEP
// as registry tools do, so an operator can switch off the REPL.
func TestOwnToolVisibility(t *testing.T) {
	cases := []struct {
		name                string
		allowed, disallowed []string
		top                 bool
		want                []string
	}{
		{"none", nil, nil, true, agent.DeepOwnTools},
		{"subagent has no task", nil, nil, false, slices.DeleteFunc(slices.Clone(agent.DeepOwnTools), func(s string) bool { return s == "task" })},
		{"blacklist", nil, []string{"js_eval", "task", "write_todos"}, true, []string{"ls", "read_file", "write_file", "edit_file", "glob", "grep"}},
		{"whitelist", []string{"read_file", "ls", "query_health_indicators"}, nil, true, []string{"ls", "read_file"}},
		{"blacklist wins", []string{"read_file", "ls"}, []string{"ls"}, true, []string{"read_file"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := New(Options{Allowed: c.allowed, Disallowed: c.disallowed, Log: servicetest.Logger(t)})
			tools, err := a.toolset(context.Background(), &turn.Turn{AccountID: "a", SessionID: "s"}, c.top)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tl := range tools {
				got = append(got, tl.def.Name)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("tools %v, want %v", got, c.want)
			}
		})
	}
}
