package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
)

// switchable lets each subtest install its own responder on one server.
type switchable struct {
	mu sync.Mutex
	r  scripted.Responder
}

func (s *switchable) set(r scripted.Responder) { s.mu.Lock(); s.r = r; s.mu.Unlock() }

func (s *switchable) respond(r *scripted.Received) (scripted.Step, error) {
	s.mu.Lock()
	f := s.r
	s.mu.Unlock()
	return f(r)
}

func finishOf(evs []agent.Event) string {
	if len(evs) == 0 || evs[len(evs)-1].Type != agent.EventEnd {
		return "(no end)"
	}
	return evs[len(evs)-1].FinishReason
}

func textOf(evs []agent.Event) string {
	s := ""
	for _, e := range ofType(evs, agent.EventText) {
		s += e.Text
	}
	return s
}

func TestChatProviderFaults(t *testing.T) {
	sw := &switchable{}
	srv := scripted.New(sw.respond)
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, nil)
	ok := scripted.Step{Text: "fine now"}
	cases := []struct {
		name    string
		steps   []scripted.Step
		finish  string
		text    string
		notice  bool
		minTime time.Duration
		errText string
	}{
		{"429 with Retry-After", []scripted.Step{{Fault: &scripted.Fault{Status: 429, RetryAfter: "1"}}, ok}, agent.FinishStop, "fine now", false, 900 * time.Millisecond, ""},
		{"500 then success", []scripted.Step{{Fault: &scripted.Fault{Status: 500}}, ok}, agent.FinishStop, "fine now", false, 0, ""},
		{"stream dropped then success", []scripted.Step{{Text: "half an ans", DropAfterText: true}, ok}, agent.FinishStop, "half an ansfine now", true, 0, ""},
		{"500 until retries run out", []scripted.Step{{Fault: &scripted.Fault{Status: 500}}, {Fault: &scripted.Fault{Status: 500}}, {Fault: &scripted.Fault{Status: 500}}, {Fault: &scripted.Fault{Status: 500}}}, agent.FinishUnavailable, "", false, 0, "HTTP 500 unavailable"},
		{"stream dropped every time", []scripted.Step{{Text: "a", DropAfterText: true}, {Text: "b", DropAfterText: true}, {Text: "c", DropAfterText: true}}, agent.FinishUnavailable, "abc", true, 0, "stream broke mid-way"},
	}
	for _, provider := range []string{"oa", "an"} {
		for _, tc := range cases {
			t.Run(provider+"/"+tc.name, func(t *testing.T) {
				sw.set(scripted.Sequence(tc.steps...))
				start := time.Now()
				evs := st.chat(t, map[string]any{"question": "first " + tc.name, "provider": provider})
				if finishOf(evs) != tc.finish || textOf(evs) != tc.text || (len(ofType(evs, agent.EventNotice)) > 0) != tc.notice {
					t.Fatalf("finish %q text %q notices %d; events %+v", finishOf(evs), textOf(evs), len(ofType(evs, agent.EventNotice)), evs)
				}
				if tc.finish != agent.FinishStop && len(ofType(evs, agent.EventError)) != 1 {
					t.Fatalf("a failed turn has no error event: %+v", evs)
				}
				// The error names the provider and, when there was one, the HTTP status.
				if errs := ofType(evs, agent.EventError); len(errs) == 1 && !strings.HasPrefix(errs[0].Message, "provider "+provider+": "+tc.errText) {
					t.Fatalf("error %q, want it to start with %q", errs[0].Message, "provider "+provider+": "+tc.errText)
				}
				if d := time.Since(start); d < tc.minTime {
					t.Fatalf("turn took %v, want Retry-After honoured (>= %v)", d, tc.minTime)
				}
				// The session records how the turn ended, and why a failed one failed.
				code, body := httpGet(t, st.URL+"/api/sessions/"+evs[0].SessionID, st.Key)
				var got sessions.SessionGetResponse
				if code != http.StatusOK || json.Unmarshal(body, &got) != nil || len(got.Turns) != 1 || got.Turns[0].Finish != tc.finish ||
					(tc.finish != agent.FinishStop) != strings.HasPrefix(got.Turns[0].Error, "provider "+provider+": ") {
					t.Fatalf("the session after the turn: %d %s", code, body)
				}
				// The next turn replays a consistent history: the first
				// question, its complete answer or none, and no partial text.
				var seen []string
				sw.set(func(r *scripted.Received) (scripted.Step, error) {
					for _, m := range r.Messages {
						seen = append(seen, m.Role+":"+m.Content)
					}
					return scripted.Step{Text: "second"}, nil
				})
				evs2 := st.chat(t, map[string]any{"question": "second", "provider": provider, "session_id": evs[0].SessionID})
				if finishOf(evs2) != agent.FinishStop {
					t.Fatalf("second turn: %+v", evs2)
				}
				want := []string{"user:first " + tc.name, "assistant:fine now", "user:second"}
				if tc.finish != agent.FinishStop {
					want = []string{"user:first " + tc.name, "user:second"}
				}
				if strings.Join(seen, "|") != strings.Join(want, "|") {
					t.Fatalf("replayed history %q, want %q", seen, want)
				}
			})
		}
	}
}

func TestChatEviction(t *testing.T) {
	sw := &switchable{}
	srv := scripted.New(sw.respond)
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, nil)
	var preview, page string
	sw.set(func(r *scripted.Received) (scripted.Step, error) {
		res := r.ToolResults()
		switch r.StepsSinceUser() {
		case 0:
			return scripted.Step{Calls: []scripted.Call{{Name: "big", Args: `{}`}}}, nil
		case 1:
			preview = res[0].Content
			var path string
			for _, f := range strings.Fields(preview) {
				if strings.HasPrefix(f, "/large_tool_results/") {
					path = strings.TrimSuffix(f, ".")
					break
				}
			}
			args, _ := json.Marshal(map[string]any{"file_path": path, "offset": 2990, "limit": 2})
			return scripted.Step{Calls: []scripted.Call{{Name: "read_file", Args: string(args)}}}, nil
		}
		page = res[0].Content
		return scripted.Step{Text: "read it"}, nil
	})
	evs := st.chat(t, map[string]any{"question": "big result please", "provider": "oa"})
	if finishOf(evs) != agent.FinishStop {
		t.Fatalf("events %+v", evs)
	}
	if len(preview) > 5000 || !strings.Contains(preview, "line 0 of a large result") || !strings.Contains(preview, "line 2999 of a large result") || !strings.Contains(preview, "/large_tool_results/") {
		t.Fatalf("preview %q", preview)
	}
	if page != "  2991\tline 2990 of a large result\n  2992\tline 2991 of a large result\n" {
		t.Fatalf("page %q", page)
	}
	if r := ofType(evs, agent.EventToolResult)[0]; !r.Truncated || r.Status != agent.StatusPartial {
		t.Fatalf("evicted result event %+v", r)
	}
}

func TestChatSummarization(t *testing.T) {
	sw := &switchable{}
	srv := scripted.New(sw.respond)
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, func(c *conf.Config) { c.ContextTokens = 1000 })
	var last *scripted.Received
	summaries := 0
	sw.set(func(r *scripted.Received) (scripted.Step, error) {
		if strings.HasPrefix(r.System, "You summarize") {
			summaries++
			if !strings.Contains(r.LastUser(), "user: q1") {
				return scripted.Step{}, fmt.Errorf("summary request lacks the first question: %s", r.LastUser())
			}
			return scripted.Step{Text: "SUMMARY: the user asked q1 and q2"}, nil
		}
		last = r
		return scripted.Step{Text: "answer to " + r.LastUser()}, nil
	})
	session := ""
	for i := 1; i <= 5; i++ {
		body := map[string]any{"question": fmt.Sprintf("q%d", i), "provider": "an"}
		if session != "" {
			body["session_id"] = session
		}
		evs := st.chat(t, body)
		if finishOf(evs) != agent.FinishStop {
			t.Fatalf("turn %d: %+v", i, evs)
		}
		session = evs[0].SessionID
		if i == 5 && len(ofType(evs, agent.EventNotice)) != 1 {
			t.Fatalf("no summarization notice in turn 5: %+v", evs)
		}
	}
	if errs := srv.Errors(); len(errs) > 0 {
		t.Fatal(errs)
	}
	if summaries != 1 || !strings.Contains(last.Messages[0].Content, "SUMMARY: the user asked q1 and q2") || last.LastUser() != "q5" || len(last.Messages) != 7 {
		t.Fatalf("summaries %d, last request %+v", summaries, last.Messages)
	}
	fs := files.NewFS(servicetest.Client(t, st.NATS))
	got, err := fs.Read(context.Background(), &files.ReadRequest{Scope: files.Scope{AccountID: st.AccountID, SessionID: session}, Path: "/conversation_history/transcript.jsonl"})
	must(t, err)
	for _, want := range []string{`"content":"q1"`, `"content":"answer to q1"`, `"content":"q2"`} {
		if !strings.Contains(got.Content, want) {
			t.Fatalf("transcript lacks %s: %s", want, got.Content)
		}
	}
}
