package stack

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
)

// lastTurn describes the newest assistant message in the transcript.
const lastTurn = `(() => {
  const turns = document.querySelectorAll("#transcript .msg-assistant");
  const m = turns[turns.length - 1];
  const all = (sel) => [...m.querySelectorAll(sel)].map((e) => e.textContent);
  return {
    turns: turns.length,
    users: [...document.querySelectorAll("#transcript .msg-user")].map((e) => e.textContent),
    finish: m.dataset.finish || "",
    text: all(".text").join(""),
    tools: [...m.querySelectorAll(".tool-call")].map((e) => e.dataset.tool),
    badges: all(".tool-call .badge"),
    results: all(".tool-output"),
    todos: [...m.querySelectorAll(".todo")].map((e) => e.className + " " + e.textContent),
    reasoning: all(".reasoning-text").join(""),
    injected: document.getElementById("injected") !== null,
    hash: location.hash,
  };
})()`

type turnView struct {
	Turns     int      `json:"turns"`
	Users     []string `json:"users"`
	Finish    string   `json:"finish"`
	Text      string   `json:"text"`
	Tools     []string `json:"tools"`
	Badges    []string `json:"badges"`
	Results   []string `json:"results"`
	Todos     []string `json:"todos"`
	Reasoning string   `json:"reasoning"`
	Injected  bool     `json:"injected"`
	Hash      string   `json:"hash"`
}

// checkScriptedTurn checks the page shows the scripted demo turn of
// testdata/chat_scripted.sse.golden.
func checkScriptedTurn(t *testing.T, v turnView, question string) {
	t.Helper()
	wantTools := []string{"write_todos", "write_file", "read_file", "js_eval", "write_todos"}
	if v.Finish != "stop" || !slices.Equal(v.Tools, wantTools) || !strings.Contains(v.Text, "6 × 7 = 42") || !strings.Contains(v.Text, question) {
		t.Fatalf("turn on the page: %+v", v)
	}
	for _, b := range v.Badges {
		if b != "done" {
			t.Fatalf("tool badges %v", v.Badges)
		}
	}
	if !slices.Contains(v.Results, "sum 21\n=> 42\n") || v.Reasoning != "All steps are done; summarizing." || len(v.Todos) != 3 {
		t.Fatalf("results %q, reasoning %q, todos %q", v.Results, v.Reasoning, v.Todos)
	}
	for _, td := range v.Todos {
		if !strings.HasPrefix(td, "todo completed") {
			t.Fatalf("todos %q: want all completed", v.Todos)
		}
	}
	// The question held markup; the page must show it as text.
	if v.Injected || !slices.Contains(v.Users, question) {
		t.Fatalf("question shown as %q (markup injected: %v)", v.Users, v.Injected)
	}
}

// TestWebBrowser drives the web app in headless Chromium against the whole
// stack with the scripted provider: sign in with a fresh account's key,
// run a chat turn (watching it stream), reopen it from the session list, upload health data
// (good and bad) and a 23andMe file, create and revoke an API key, and delete the session.
// Screenshots go to the test's artifact directory (go test -artifacts).
func TestWebBrowser(t *testing.T) {
	// The scripted demo turn of `mirobody dev`, held before its answer
	// until the test has seen the first steps on the page: proof that the
	// page renders the stream as it comes, not at the end.
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		step, err := scripted.Demo(r)
		if step.Reasoning != "" {
			select {
			case <-release:
			case <-time.After(2 * time.Minute):
				return step, errors.New("the test never released the answer")
			}
		}
		return step, err
	})
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, func(c *conf.Config) { c.Provider = "oa" })
	b := startBrowser(t)

	// Sign in. A wrong key is refused with a message first.
	b.do("opening the app",
		chromedp.Navigate(st.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("login-key")),
		chromedp.SendKeys(chromedp.ID("login-key"), "mb_wrong"),
		chromedp.Click(chromedp.ID("login-submit")),
	)
	b.waitFor("a wrong key is refused", `document.getElementById("login-error").textContent.includes("not accepted")`)
	b.do("signing in",
		chromedp.Evaluate[chromedp.Void](`document.getElementById("login-key").value = ""`),
		chromedp.SendKeys(chromedp.ID("login-key"), st.Key),
		chromedp.Click(chromedp.ID("login-submit")),
		chromedp.WaitVisible(chromedp.ID("composer-input")),
	)
	if loc := eval[string](b, `location.pathname`); loc != "/app/" {
		t.Fatalf("/ led to %s, want /app/", loc)
	}
	if who := eval[string](b, `document.getElementById("whoami").textContent`); who != "chat@example.com" {
		t.Fatalf("signed in as %q", who)
	}

	// A chat turn streams text, reasoning, tool calls and todos.
	question := "show me <b id=injected>bold</b>"
	b.do("sending a question",
		chromedp.SendKeys(chromedp.ID("composer-input"), question),
		chromedp.Click(chromedp.ID("composer-send")),
	)
	b.waitFor("the first steps stream in", `(() => {
	  const m = document.querySelector("#transcript .msg-assistant.streaming:not([data-finish])");
	  return m !== null && m.querySelector(".text")?.textContent === "Let me plan this." &&
	    m.querySelector('.tool-call[data-tool="js_eval"] .badge.ok') !== null && m.querySelectorAll(".todo").length === 3;
	})()`)
	b.screenshot("streaming.png")
	once.Do(func() { close(release) })
	b.waitFor("the turn ends", `document.querySelector('#transcript .msg-assistant[data-finish]') !== null`)
	turn := eval[turnView](b, lastTurn)
	checkScriptedTurn(t, turn, question)
	sessionID, ok := strings.CutPrefix(turn.Hash, "#/chat/")
	if !ok || sessionID == "" {
		t.Fatalf("address %q does not name the session", turn.Hash)
	}
	b.waitFor("the session is listed", `document.querySelectorAll("#session-list li").length === 1`)
	b.do("showing the tool calls", chromedp.Click(chromedp.CSS(`.tool-call[data-tool="js_eval"] summary`)),
		chromedp.Click(chromedp.CSS(`.reasoning summary`)),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("transcript").scrollTop = 1e9`))
	b.screenshot("chat.png")

	// The stored session replays through the same renderer.
	b.do("starting a new chat", chromedp.Click(chromedp.ID("new-chat")))
	b.waitFor("the transcript is cleared", `document.querySelectorAll("#transcript .msg").length === 0`)
	b.do("opening the session", chromedp.Click(chromedp.CSS(`#session-list li a`)))
	b.waitFor("the session opens", `document.querySelector('#transcript .msg-assistant[data-finish]') !== null`)
	checkScriptedTurn(t, eval[turnView](b, lastTurn), question)

	// Health data: a good CSV imports; a bad one is refused with its line numbers.
	csv, err := filepath.Abs("../../examples/health.csv")
	must(t, err)
	raw, err := os.ReadFile(csv)
	must(t, err)
	rows := strings.Count(strings.TrimSpace(string(raw)), "\n")
	bad := filepath.Join(t.TempDir(), "bad.csv")
	must(t, os.WriteFile(bad, []byte("indicator,value,unit,time\nGlucose,5.1,mmol/L,2026-01-01\nGlucose,high,mmol/L,2026-01-02\n"), 0o644))
	b.do("uploading health data",
		chromedp.Click(chromedp.CSS(`#nav a[data-view="data"]`)),
		chromedp.WaitVisible(chromedp.ID("health-form")),
		chromedp.SetUploadFiles(chromedp.ID("health-file"), []string{csv}),
		chromedp.Click(chromedp.ID("health-upload")),
	)
	b.waitFor("the upload succeeds", `document.querySelector("#health-result.ok") !== null`)
	if got := eval[string](b, `document.getElementById("health-result").textContent`); !strings.Contains(got, "Imported "+strconv.Itoa(rows)+" valid rows") {
		t.Fatalf("upload result %q, want %d rows", got, rows)
	}
	b.do("uploading a bad file",
		chromedp.SetUploadFiles(chromedp.ID("health-file"), []string{bad}),
		chromedp.Click(chromedp.ID("health-upload")),
	)
	b.waitFor("the bad upload is refused", `document.querySelector("#health-result.failed .line-errors") !== null`)
	if got := eval[[]string](b, `[...document.querySelectorAll("#health-result .line-errors td.num")].map((e) => e.textContent)`); !slices.Equal(got, []string{"3"}) {
		t.Fatalf("lines reported %v, want [3]", got)
	}
	genome, err := filepath.Abs("../../examples/genome_23andme.txt")
	must(t, err)
	b.do("uploading genetic data",
		chromedp.SetUploadFiles(chromedp.ID("genetic-file"), []string{genome}),
		chromedp.Click(chromedp.ID("genetic-upload")),
	)
	b.waitFor("the genetic upload succeeds", `document.querySelector("#genetic-result.ok") !== null`)
	if got := eval[string](b, `document.getElementById("genetic-result").textContent`); !strings.Contains(got, "valid rows") {
		t.Fatalf("genetic upload result %q", got)
	}
	b.screenshot("data.png")

	// API keys: create one (shown once, and it works), then revoke it.
	b.do("creating a key",
		chromedp.Click(chromedp.CSS(`#nav a[data-view="keys"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#keys-table tbody tr[data-id]`)),
		chromedp.SendKeys(chromedp.ID("key-name"), "from the browser"),
		chromedp.Click(chromedp.ID("key-create")),
		chromedp.WaitVisible(chromedp.ID("new-key-box")),
	)
	b.waitFor("the key is listed", `document.querySelectorAll("#keys-table tbody tr[data-id]").length === 2`)
	newKey := eval[string](b, `document.getElementById("new-key").textContent`)
	if code, body := httpGet(t, st.URL+"/api/me", newKey); code != http.StatusOK {
		t.Fatalf("the new key: %d %s", code, body)
	}
	var keyID string
	for _, k := range listKeys(t, st, st.Key) {
		if k.Name == "from the browser" {
			keyID = k.ID
		}
	}
	if keyID == "" {
		t.Fatal("the new key is not in GET /api/keys")
	}
	b.screenshot("keys.png")
	revoke := chromedp.CSS(`#keys-table tr[data-id="` + keyID + `"] button`)
	b.do("revoking the key", chromedp.Click(revoke), chromedp.Click(revoke),
		chromedp.WaitNotPresent(chromedp.CSS(`#keys-table tr[data-id="`+keyID+`"]`)))
	servicetest.Eventually(t, 5*time.Second, func() bool {
		code, _ := httpGet(t, st.URL+"/api/me", newKey)
		return code == http.StatusUnauthorized
	}, "the revoked key is refused")

	// The MCP servers page lists none yet (TestWebMCPServers drives it).
	b.do("opening MCP servers", chromedp.Click(chromedp.CSS(`#nav a[data-view="mcp"]`)))
	b.waitFor("the MCP servers page loads", `document.querySelector("#mcp-table tbody td.muted")?.textContent === "No servers yet."`)

	// Delete the session from the list.
	b.do("deleting the session",
		chromedp.Click(chromedp.CSS(`#nav a[data-view="chat"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#session-list li button.danger`)),
		chromedp.Click(chromedp.CSS(`#session-list li button.danger`)),
		chromedp.Click(chromedp.CSS(`#session-list li button.danger`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#session-list li`)),
	)
	if code, body := httpGet(t, st.URL+"/api/sessions/"+sessionID, st.Key); code != http.StatusNotFound {
		t.Fatalf("deleted session: %d %s", code, body)
	}

	// Signing out forgets the key.
	b.do("signing out", chromedp.Click(chromedp.ID("logout")), chromedp.WaitVisible(chromedp.ID("login-key")))
	if tok := eval[string](b, `sessionStorage.getItem("mirobody.token") || ""`); tok != "" {
		t.Fatal("the key outlived signing out")
	}

	// Revoking the key one is signed in with signs out, with a note.
	b.do("signing in again",
		chromedp.SendKeys(chromedp.ID("login-key"), st.Key),
		chromedp.Click(chromedp.ID("login-submit")),
		chromedp.WaitVisible(chromedp.ID("composer-input")),
		chromedp.Click(chromedp.CSS(`#nav a[data-view="keys"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#keys-table tr[data-id] button`)),
	)
	own := chromedp.CSS(`#keys-table tr[data-id] button`)
	b.do("revoking the key in use", chromedp.Click(own), chromedp.Click(own), chromedp.WaitVisible(chromedp.ID("login-key")))
	b.waitFor("the sign-in form says why", `document.getElementById("login-error").textContent.includes("You revoked the key")`)
	b.noPageErrors()
}
