package stack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	"github.com/mirobody/mirobody-go/services/wire"
)

// TestChatRunSurvivesDisconnect: a client that goes away does not stop
// the turn (issue 16: a run keeps going when the browser closes). The
// session shows the question as a turn in progress from the first event
// on, and the finished answer when the user comes back.
func TestChatRunSurvivesDisconnect(t *testing.T) {
	asked := make(chan struct{}, 1)
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		asked <- struct{}{}
		return scripted.Step{Delay: time.Second, Text: "a slow answer"}, nil
	})
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start, _ := st.startStream(t, ctx, map[string]any{"question": "slow", "provider": "oa"})
	<-asked // the model call is in flight
	code, body := httpGet(t, st.URL+"/api/sessions/"+start.SessionID, st.Key)
	var running sessions.SessionGetResponse
	if code != http.StatusOK || json.Unmarshal(body, &running) != nil || len(running.Turns) != 1 ||
		running.Turns[0].Finish != sessions.FinishRunning || running.Turns[0].Question != "slow" || running.Turns[0].RunID != start.ID {
		t.Fatalf("the session of a running turn: %d %s", code, body)
	}
	cancel()
	servicetest.Eventually(t, 10*time.Second, func() bool {
		code, body := httpGet(t, st.URL+"/api/sessions/"+start.SessionID, st.Key)
		var got sessions.SessionGetResponse
		return code == http.StatusOK && json.Unmarshal(body, &got) == nil && len(got.Turns) == 1 &&
			got.Turns[0].Finish == agent.FinishStop && got.Turns[0].Answer == "a slow answer"
	}, "the turn did not finish after its client went away")
}

// startStream posts a chat turn and reads its start event; the rest of
// the stream is left to the caller.
func (st *chatStack) startStream(t *testing.T, ctx context.Context, body map[string]any) (agent.Event, *bufio.Reader) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, st.URL+"/api/chat", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+st.Key)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	r := bufio.NewReader(resp.Body)
	line, err := r.ReadString('\n')
	must(t, err)
	if strings.HasPrefix(line, "id: ") {
		line, err = r.ReadString('\n')
		must(t, err)
	}
	var start agent.Event
	must(t, json.Unmarshal([]byte(strings.TrimPrefix(strings.TrimSpace(line), "data: ")), &start))
	if start.Type != agent.EventStart || start.ID == "" {
		t.Fatalf("first event %q", line)
	}
	return start, r
}

// TestChatSessionDelete: deleting a session removes its turns, its VFS
// files and its REPL state, and leaves /memories/ alone.
func TestChatSessionDelete(t *testing.T) {
	sw := &switchable{}
	srv := scripted.New(sw.respond)
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, nil)
	var replOut string
	script := func(code string) scripted.Responder {
		return func(r *scripted.Received) (scripted.Step, error) {
			switch r.StepsSinceUser() {
			case 0:
				args, _ := json.Marshal(map[string]string{"code": code})
				return scripted.Step{Calls: []scripted.Call{
					{Name: "write_file", Args: `{"file_path":"/notes/x.md","content":"x"}`},
					{Name: "write_file", Args: `{"file_path":"/memories/prefs.md","content":"likes tea"}`},
					{Name: "js_eval", Args: string(args)}}}, nil
			}
			replOut = r.ToolResults()[2].Content
			return scripted.Step{Text: "ok"}, nil
		}
	}
	sw.set(script("var kept = 1; typeof kept"))
	evs := st.chat(t, map[string]any{"question": "remember", "provider": "oa"})
	id := evs[0].SessionID
	if finishOf(evs) != agent.FinishStop || replOut != "=> number\n" {
		t.Fatalf("first turn %q %q", finishOf(evs), replOut)
	}
	sw.set(script("typeof kept"))
	st.chat(t, map[string]any{"question": "again", "provider": "oa", "session_id": id})
	if replOut != "=> number\n" {
		t.Fatalf("REPL state did not persist across turns: %q", replOut)
	}

	req, _ := http.NewRequest(http.MethodDelete, st.URL+"/api/sessions/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+st.Key)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var del sessions.SessionDeleteResponse
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &del) != nil || del.FilesDeleted != 1 {
		t.Fatalf("DELETE: %s %s", resp.Status, body)
	}
	if code, _ := httpGet(t, st.URL+"/api/sessions/"+id, st.Key); code != http.StatusNotFound {
		t.Fatalf("GET after DELETE: %d", code)
	}
	fs := files.NewFS(servicetest.Client(t, st.NATS))
	ctx := context.Background()
	if _, err := fs.Stat(ctx, &files.StatRequest{Scope: files.Scope{AccountID: st.AccountID, SessionID: id}, Path: "/notes/x.md"}); !wire.IsCode(err, wire.NotFound) {
		t.Fatalf("session file after DELETE: %v", err)
	}
	if _, err := fs.Stat(ctx, &files.StatRequest{Scope: files.Scope{AccountID: st.AccountID}, Path: "/memories/prefs.md"}); err != nil {
		t.Fatalf("memories after DELETE: %v", err)
	}
	// The same id starts over: the REPL state went with the session. The
	// deletion event is asynchronous, so poll with fresh turns.
	sw.set(script("typeof kept"))
	servicetest.Eventually(t, 2*time.Second, func() bool {
		st.chat(t, map[string]any{"question": "after delete", "provider": "oa", "session_id": id})
		return replOut == "=> undefined\n"
	}, "REPL state survived the session's deletion")
}

// TestChatAllowedTools: ALLOWED_TOOLS_DEEP limits the tools the model sees
// and may call, registry tools and the agent's own alike.
func TestChatAllowedTools(t *testing.T) {
	var offered []string
	var result string
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		if r.StepsSinceUser() == 0 {
			offered = r.Tools
			return scripted.Step{Calls: []scripted.Call{{Name: "whoami", Args: `{}`}}}, nil
		}
		result = r.ToolResults()[0].Content
		return scripted.Step{Text: "ok"}, nil
	})
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, func(c *conf.Config) { c.AllowedToolsDeep = []string{"add", "read_file", "js_eval"} })
	st.chat(t, map[string]any{"question": "who", "provider": "oa"})
	has := map[string]bool{}
	for _, n := range offered {
		has[n] = true
	}
	if !has["add"] || has["whoami"] || has["big"] || !has["read_file"] || !has["js_eval"] || has["ls"] || has["task"] {
		t.Fatalf("offered %v", offered)
	}
	if !strings.Contains(result, "not available") {
		t.Fatalf("calling a tool outside the whitelist: %q", result)
	}
}
