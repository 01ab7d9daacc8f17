package stack

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	"github.com/mirobody/mirobody-go/services/wire"
)

// TestChatRunCancel: POST /api/runs/{id}/cancel stops the run named by
// the stream's start event; the stream ends cancelled and the session
// records the turn cancelled. Another account cannot stop it, and a
// malformed id is refused.
func TestChatRunCancel(t *testing.T) {
	asked := make(chan struct{}, 1)
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		asked <- struct{}{}
		return scripted.Step{Delay: 3 * time.Second, Text: "a very slow answer"}, nil
	})
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, nil)
	start, stream := st.startStream(t, context.Background(), map[string]any{"question": "slow", "provider": "oa"})
	<-asked

	other := st.otherKey(t, "intruder@example.com")
	cases := []struct {
		name, id, key string
		code          int
	}{
		{"not a run id", "not-a-uuid", st.Key, http.StatusBadRequest},
		{"no key", start.ID, "", http.StatusUnauthorized},
		{"another account's run", start.ID, other, http.StatusAccepted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := httpPost(t, st.URL+"/api/runs/"+tc.id+"/cancel", tc.key); code != tc.code {
				t.Fatalf("POST cancel: %d %s, want %d", code, body, tc.code)
			}
		})
	}
	cancelled := time.Now()
	if code, body := httpPost(t, st.URL+"/api/runs/"+start.ID+"/cancel", st.Key); code != http.StatusAccepted || !strings.Contains(string(body), start.ID) {
		t.Fatalf("POST cancel: %d %s", code, body)
	}
	evs := readEvents(t, stream)
	if finishOf(evs) != agent.FinishCancelled {
		t.Fatalf("the stream after cancel: %+v", evs)
	}
	if d := time.Since(cancelled); d > 2*time.Second {
		t.Fatalf("cancellation took %v (the other account's cancel must not have counted either)", d)
	}
	code, body := httpGet(t, st.URL+"/api/sessions/"+start.SessionID, st.Key)
	var got sessions.SessionGetResponse
	if code != http.StatusOK || json.Unmarshal(body, &got) != nil || len(got.Turns) != 1 || got.Turns[0].Finish != agent.FinishCancelled || got.Turns[0].Error == "" {
		t.Fatalf("the session after cancel: %d %s", code, body)
	}
}

// TestChatTurnsPerAccountLimit: one account may run
// AGENT_MAX_TURNS_PER_ACCOUNT turns at once; one more is refused with
// resource_exhausted and leaves no turn in progress behind, other
// accounts are not affected, and an ended turn frees its place.
func TestChatTurnsPerAccountLimit(t *testing.T) {
	release := make(chan struct{})
	srv := scripted.New(func(*scripted.Received) (scripted.Step, error) {
		<-release
		return scripted.Step{Text: "done"}, nil
	})
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, func(c *conf.Config) { c.MaxTurnsPerAccount = 2 })
	client := servicetest.Client(t, st.NATS)
	b, err := accounts.NewAccounts(client).Create(context.Background(), &accounts.AccountCreateRequest{Email: "b@example.com"})
	must(t, err)
	start := func(account, session string) error {
		_, err := agent.RunsStart.Call(context.Background(), client, &agent.StartRequest{RunID: uuid.NewString(),
			AccountID: account, SessionID: session, Question: "q", Agent: string(agent.AgentDeep), Provider: "oa"})
		return err
	}
	for i := range 2 {
		must(t, start(st.AccountID, fmt.Sprint("s", i)))
	}
	if err := start(st.AccountID, "refused"); !wire.IsCode(err, wire.ResourceExhausted) {
		t.Fatalf("a third turn of one account: %v, want resource_exhausted", err)
	}
	if code, body := httpGet(t, st.URL+"/api/sessions/refused", st.Key); code != http.StatusNotFound {
		t.Fatalf("a refused turn left a session: %d %s", code, body)
	}
	if err := start(b.ID, "b0"); err != nil {
		t.Fatalf("another account's turn: %v", err)
	}
	close(release)
	servicetest.Eventually(t, 10*time.Second, func() bool { return start(st.AccountID, "later") == nil },
		"a turn after the others ended was refused")
}

// otherKey creates another account and returns its API key.
func (st *chatStack) otherKey(t *testing.T, email string) string {
	t.Helper()
	accts := accounts.NewAccounts(servicetest.Client(t, st.NATS))
	acct, err := accts.Create(context.Background(), &accounts.AccountCreateRequest{Email: email})
	must(t, err)
	key, err := accts.CreateKey(context.Background(), &accounts.KeyCreateRequest{AccountID: acct.ID, Name: "k"})
	must(t, err)
	return key.Key
}

// httpPost posts an empty body with the key (none when empty).
func httpPost(t *testing.T, url, key string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	var body json.RawMessage
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

// readEvents reads the SSE data lines of a stream to its end.
func readEvents(t *testing.T, r *bufio.Reader) []agent.Event {
	t.Helper()
	var evs []agent.Event
	for {
		line, err := r.ReadString('\n')
		if after, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			var ev agent.Event
			must(t, json.Unmarshal([]byte(after), &ev))
			evs = append(evs, ev)
		}
		if err != nil {
			return evs
		}
	}
}
