package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	"github.com/mirobody/mirobody-go/services/wire"
)

// TestChatInputHygiene: a chat request that cannot become a turn is
// refused with a 4xx before any model call: a body over
// MAX_REQUEST_BYTES (413), text no store can hold (NUL, an unpaired
// surrogate, invalid UTF-8: 400), and a session id that another account
// owns (409).
func TestChatInputHygiene(t *testing.T) {
	srv := scripted.New(scripted.Sequence(scripted.Step{Text: "should not be asked"}))
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, func(c *conf.Config) { c.MaxRequestBytes = 1024 })

	ctx := context.Background()
	nc := servicetest.Client(t, st.NATS)
	accts := accounts.NewAccounts(nc)
	other, err := accts.Create(ctx, &accounts.AccountCreateRequest{Email: "other@example.com"})
	must(t, err)
	_, err = sessions.NewSessions(nc).Save(ctx, &sessions.SessionSaveRequest{AccountID: other.ID, SessionID: "taken-1", Title: "theirs",
		Messages: json.RawMessage(`[]`), Turn: sessions.Turn{RunID: "theirs-1", Question: "theirs", Answer: "a", Finish: "stop"}})
	must(t, err)

	cases := []struct {
		name string
		body string
		code int
		msg  []string
	}{
		{"over MAX_REQUEST_BYTES", `{"question":"` + strings.Repeat("x", 2000) + `"}`, http.StatusRequestEntityTooLarge, []string{"too large", "1024", "MAX_REQUEST_BYTES"}},
		{"NUL", `{"question":"a\u0000b","provider":"oa"}`, http.StatusBadRequest, []string{"NUL"}},
		{"lone surrogate", `{"question":"a\ud800b","provider":"oa"}`, http.StatusBadRequest, []string{"unpaired", "surrogate"}},
		{"lone surrogate in another field", `{"question":"q","language":"\udfff","provider":"oa"}`, http.StatusBadRequest, []string{"surrogate"}},
		{"invalid UTF-8", "{\"question\":\"caf\xe9\",\"provider\":\"oa\"}", http.StatusBadRequest, []string{"UTF-8"}},
		{"session of another account", `{"question":"q","session_id":"taken-1","provider":"oa"}`, http.StatusConflict, []string{"taken-1", "already taken"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, st.URL+"/api/chat", strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+st.Key)
			resp, err := http.DefaultClient.Do(req)
			must(t, err)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.code {
				t.Fatalf("%d %s, want %d", resp.StatusCode, body, tc.code)
			}
			for _, m := range tc.msg {
				if !strings.Contains(string(body), m) {
					t.Errorf("body %s lacks %q", body, m)
				}
			}
		})
	}
	// agent-svc refuses a NUL itself, for callers other than the gateway.
	_, err = agent.NewClient(nc).Run(ctx, &agent.StartRequest{RunID: "r-nul", AccountID: other.ID, Question: "a\x00b", Provider: "oa"}, func(agent.Event) {})
	if !wire.IsCode(err, wire.InvalidArgument) || !strings.Contains(err.Error(), "NUL") {
		t.Errorf("NUL straight to agent-svc: %v", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("the provider was called %d times for refused turns", n)
	}
	// The other account's session is untouched.
	got, err := sessions.NewSessions(nc).Get(ctx, &sessions.SessionGetRequest{AccountID: other.ID, SessionID: "taken-1"})
	must(t, err)
	if len(got.Turns) != 1 || got.Turns[0].Question != "theirs" {
		t.Errorf("the other account's session changed: %+v", got.Turns)
	}
	// A valid turn still runs.
	evs := st.chat(t, map[string]any{"question": "ok", "provider": "oa"})
	if finishOf(evs) != "stop" {
		t.Errorf("valid turn: %+v", evs)
	}
}

// TestHTTPReadTimeout: HTTP_READ_TIMEOUT_S bounds reading a request, not
// answering it: a chat turn streams past it, and a data upload that takes
// longer gets the import's own deadline.
func TestHTTPReadTimeout(t *testing.T) {
	srv := scripted.New(scripted.Sequence(scripted.Step{Delay: 1500 * time.Millisecond, Text: "late but whole"}))
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, func(c *conf.Config) { c.HTTPReadTimeoutS = 1 })

	evs := st.chat(t, map[string]any{"question": "slow", "provider": "oa"})
	if finishOf(evs) != "stop" || !strings.Contains(textOf(evs), "late but whole") {
		t.Errorf("slow turn: %+v", evs)
	}

	pr, pw := io.Pipe()
	go func() {
		tick := time.NewTicker(100 * time.Millisecond) // paces the upload over 2 s
		defer tick.Stop()
		_, _ = io.WriteString(pw, "indicator,value,unit,time\n")
		for i := range 20 {
			<-tick.C
			if _, err := fmt.Fprintf(pw, "Pulse,%d,bpm,2026-01-01T00:%02d:00Z\n", 60+i, i); err != nil {
				return
			}
		}
		pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, st.URL+"/api/data/health", pr)
	req.Header.Set("Authorization", "Bearer "+st.Key)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"written":20`) {
		t.Fatalf("slow upload: %d %s", resp.StatusCode, body)
	}
}

// TestChatEventTooLarge: a tool call whose arguments are over the NATS max
// payload streams without them (its event would otherwise be lost and the
// turn declared dead), the tool says the write is too large, and the turn
// ends at once with errors that say so.
func TestChatEventTooLarge(t *testing.T) {
	var limit int64
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		if r.StepsSinceUser() == 0 {
			args, _ := json.Marshal(map[string]string{"file_path": "/big.txt", "content": strings.Repeat("x", int(limit)+1)})
			return scripted.Step{Calls: []scripted.Call{{Name: "write_file", Args: string(args)}}}, nil
		}
		return scripted.Step{Text: "tried"}, nil
	})
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, nil)
	limit = servicetest.Client(t, st.NATS).MaxPayload()
	t0 := time.Now()
	evs := st.chat(t, map[string]any{"question": "write a big file", "provider": "oa"})
	if d := time.Since(t0); d > 20*time.Second {
		t.Errorf("the turn took %s", d)
	}
	calls, results := ofType(evs, "tool_call"), ofType(evs, "tool_result")
	if len(calls) != 1 || !calls[0].Truncated || calls[0].Name != "write_file" || !strings.Contains(calls[0].Message, "too large") || len(calls[0].Args) != 0 {
		t.Errorf("tool_call events %+v", calls)
	}
	if len(results) != 1 || results[0].Status != "error" || !strings.Contains(results[0].Content, "too large") {
		t.Errorf("tool_result events %+v", results)
	}
	if errs := ofType(evs, "error"); len(errs) != 1 || !strings.Contains(errs[0].Message, "too large to save") {
		t.Errorf("error events %+v", errs)
	}
	if ofType(evs, "end") == nil {
		t.Errorf("no end event: %+v", evs)
	}
}
