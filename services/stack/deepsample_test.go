package stack

import (
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
)

// TestDeepToolSampling runs a Deep turn whose Python tool asks the caller's
// model: the turn's own provider answers, and a tool that elicits learns
// that the agent cannot ask the user.
func TestDeepToolSampling(t *testing.T) {
	var (
		mu      sync.Mutex
		sampled []*scripted.Received
	)
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		switch {
		case r.System == "You write haiku.":
			mu.Lock()
			sampled = append(sampled, r)
			mu.Unlock()
			return scripted.Step{Text: "rain on the roof"}, nil
		case r.StepsSinceUser() == 0:
			return scripted.Step{Calls: []scripted.Call{{Name: "haiku", Args: `{"topic":"rain"}`}, {Name: "ask_user", Args: `{}`}}}, nil
		}
		return scripted.Step{Text: "done"}, nil
	})
	t.Cleanup(srv.Close)
	tools, err := filepath.Abs("testdata/sample-tools")
	must(t, err)
	st := startChatStack(t, srv, func(c *conf.Config) { c.MCPToolDirs = append(c.MCPToolDirs, tools) })
	evs := st.chat(t, map[string]any{"question": "A haiku?", "agent": "deep", "provider": "oa"})
	var got []string
	for _, e := range ofType(evs, agent.EventToolResult) {
		got = append(got, e.Content)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"cannot ask: elicitation", "haiku: rain on the roof"}) {
		t.Errorf("tool results %v; provider errors %v", got, srv.Errors())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sampled) != 1 || sampled[0].LastUser() != "A haiku about rain" || sampled[0].Model != "gpt-test" || len(sampled[0].Tools) != 0 {
		t.Errorf("sampling requests %+v", sampled)
	}
}
