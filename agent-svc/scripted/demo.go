package scripted

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Demo is the responder `mirobody dev` uses with PROVIDER=scripted: a
// stateless multi-step turn (plan, write a file, read it back, compute in
// the REPL, answer) that exercises the Deep agent's tools with no API key.
// Tools the request does not offer are skipped. The REPL keeps a session's
// bindings from turn to turn, so the code declares nothing: a const would
// be declared again by the session's next turn and fail.
//
// A Base-agent request (one that hands over an MCP server) gets an answer
// that names the tools the server listed to the provider. A session-title
// request gets the question's first words, and a question with a lab
// report attached starts the lab-report flow (demolab.go).
func Demo(r *Received) (Step, error) {
	q := r.LastUser()
	if strings.Contains(r.System, "short title") && len(r.Tools) == 0 {
		return demoTitle(r), nil
	}
	if step, ok := demoLab(r); ok {
		return step, nil
	}
	if r.MCP != nil {
		return Step{Text: fmt.Sprintf("This is the scripted provider (PROVIDER=scripted) running the Base agent. You asked: %q. Through the %s MCP server I can use %d tools: %s.",
			q, r.MCP.Label, len(r.Tools), strings.Join(r.Tools, ", "))}, nil
	}
	qa, _ := json.Marshal(q)
	plan := []Call{{Name: "write_todos", Args: `{"todos":[{"content":"Note the question","status":"in_progress"},{"content":"Compute an answer","status":"pending"},{"content":"Reply","status":"pending"}]}`}}
	steps := []Step{
		{Text: "Let me plan this.", Calls: plan},
		{Calls: []Call{{Name: "write_file", Args: `{"file_path":"/notes/question.md","content":` + string(qa) + `}`}}},
		{Calls: []Call{{Name: "read_file", Args: `{"file_path":"/notes/question.md"}`}, {Name: "js_eval", Args: `{"code":"console.log('sum', [1, 2, 3, 4, 5, 6].reduce((a, b) => a + b, 0)); 6 * 7"}`}}},
		{Calls: []Call{{Name: "write_todos", Args: `{"todos":[{"content":"Note the question","status":"completed"},{"content":"Compute an answer","status":"completed"},{"content":"Reply","status":"completed"}]}`}}},
	}
	n := r.StepsSinceUser()
	for n < len(steps) {
		s := steps[n]
		ok := true
		for _, c := range s.Calls {
			ok = ok && r.HasTool(c.Name)
		}
		if ok {
			return s, nil
		}
		n++
	}
	return Step{Reasoning: "All steps are done; summarizing.", Text: fmt.Sprintf("This is the scripted provider (PROVIDER=scripted). You asked: %q. I planned the work, saved your question to /notes/question.md, read it back and computed 6 × 7 = 42 in the JavaScript REPL.", q)}, nil
}
