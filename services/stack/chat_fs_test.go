package stack

import (
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
)

// TestChatFilesystemTools drives every filesystem tool through the model
// and checks what the model reads back.
func TestChatFilesystemTools(t *testing.T) {
	var got []string
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		switch r.StepsSinceUser() {
		case 0:
			return scripted.Step{Calls: []scripted.Call{
				{Name: "write_file", Args: `{"file_path":"/a/x.md","content":"alpha\nbeta\nbeta\n"}`},
				{Name: "write_file", Args: `{"file_path":"/memories/m.md","content":"gamma"}`},
			}}, nil
		case 1:
			// Calls of one step run in parallel: dependent ones go in
			// separate steps.
			return scripted.Step{Calls: []scripted.Call{
				{Name: "edit_file", Args: `{"file_path":"/a/x.md","old_string":"beta","new_string":"BETA"}`},
			}}, nil
		case 2:
			got = append(got, r.ToolResults()[0].Content)
			return scripted.Step{Calls: []scripted.Call{
				{Name: "edit_file", Args: `{"file_path":"/a/x.md","old_string":"beta","new_string":"BETA","replace_all":true}`},
			}}, nil
		case 3:
			got = append(got, r.ToolResults()[0].Content)
			return scripted.Step{Calls: []scripted.Call{
				{Name: "ls", Args: `{"path":"/a"}`},
				{Name: "glob", Args: `{"pattern":"**/*.md"}`},
				{Name: "grep", Args: `{"pattern":"BETA","output_mode":"content"}`},
				{Name: "grep", Args: `{"pattern":"gam+a"}`},
				{Name: "write_file", Args: `{"file_path":"/skills/lab-results-review/SKILL.md","content":"x"}`},
				{Name: "read_file", Args: `{"file_path":"/nope.md"}`},
			}}, nil
		}
		for _, m := range r.ToolResults() {
			got = append(got, m.Content)
		}
		return scripted.Step{Text: "ok"}, nil
	})
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, nil)
	evs := st.chat(t, map[string]any{"question": "files", "provider": "an"})
	if finishOf(evs) != agent.FinishStop {
		t.Fatalf("events %+v", evs)
	}
	want := []string{
		"failed_precondition", // two occurrences without replace_all
		"Replaced 2 occurrence(s) in /a/x.md",
		"/a/x.md (16 bytes)",
		"/a/x.md",
		"/a/x.md:2: BETA",
		"/memories/m.md",
		"permission_denied|read-only|read only",
		"not_found|no such|does not exist",
	}
	if len(got) != len(want) {
		t.Fatalf("results %q", got)
	}
	kinds := map[string]string{}
	for _, e := range ofType(evs, agent.EventToolResult) {
		kinds[e.Content] = e.ErrorKind
	}
	for i, w := range want {
		ok := false
		for _, alt := range strings.Split(w, "|") {
			ok = ok || strings.Contains(got[i], alt) || strings.Contains(kinds[got[i]], alt)
		}
		if !ok {
			t.Errorf("result %d %q (kind %q) lacks %q", i, got[i], kinds[got[i]], w)
		}
	}
	if !strings.Contains(got[3], "/memories/m.md") {
		t.Errorf("glob does not see /memories: %q", got[3])
	}

}
