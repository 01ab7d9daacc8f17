package stack

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
)

// watchWriter is an io.Writer that says when its text first holds a
// string.
type watchWriter struct {
	mu   sync.Mutex
	b    strings.Builder
	want string
	seen chan struct{}
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if w.seen != nil && strings.Contains(w.b.String(), w.want) {
		close(w.seen)
		w.seen = nil
	}
	return len(p), nil
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestChatCLIRuns: `mirobody chat` asks on the terminal about a tool call
// that needs approval and goes on with the answer; and Ctrl-C stops the
// run on the server (the turn is saved cancelled), not only the client.
func TestChatCLIRuns(t *testing.T) {
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		if r.LastUser() == "slow" {
			return scripted.Step{Delay: 30 * time.Second, Text: "too late"}, nil
		}
		if r.StepsSinceUser() == 0 {
			return scripted.Step{Calls: []scripted.Call{{Name: "write_file", Args: `{"file_path":"/a.md","content":"x"}`}}}, nil
		}
		res := r.ToolResults()
		return scripted.Step{Text: "tool said: " + res[len(res)-1].Content}, nil
	})
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, func(c *conf.Config) { c.InterruptOnDeep = []string{"write_file"} })
	args := func(q string) []string {
		return []string{"--config", "testdata/empty.yaml", "--url", st.URL, "--key", st.Key, "--provider", "oa", q}
	}

	t.Run("approval", func(t *testing.T) {
		var out, errw strings.Builder
		err := runChat(context.Background(), args("write it"), strings.NewReader("maybe\nr\nnot today\n"), &out, &errw)
		if err != nil || !strings.Contains(out.String(), "? the agent wants to run write_file") ||
			!strings.Contains(out.String(), "tool said: The user rejected this tool call: not today") || !strings.Contains(out.String(), "(stop)") {
			t.Fatalf("err %v, output:\n%s\n%s", err, out.String(), errw.String())
		}
	})

	t.Run("Ctrl-C stops the run", func(t *testing.T) {
		out := &watchWriter{want: "session ", seen: make(chan struct{})}
		seen := out.seen
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- runChat(ctx, args("slow"), strings.NewReader(""), out, &strings.Builder{}) }()
		<-seen
		cancel()
		if err := <-done; err == nil || !strings.Contains(out.String(), "(stopped run ") {
			t.Fatalf("err %v, output:\n%s", err, out.String())
		}
		session := strings.Fields(strings.SplitN(out.String(), "session ", 2)[1])[0]
		servicetest.Eventually(t, 10*time.Second, func() bool {
			code, body := httpGet(t, st.URL+"/api/sessions/"+session, st.Key)
			var got sessions.SessionGetResponse
			return code == http.StatusOK && json.Unmarshal(body, &got) == nil && len(got.Turns) == 1 && got.Turns[0].Finish == agent.FinishCancelled
		}, "the stopped turn is not recorded cancelled")
	})
}
