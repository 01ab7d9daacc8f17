package stack

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
)

// markdownAnswer is a model answer in Markdown with markup a page must
// never run: an image whose error handler sets a flag, and a script.
const markdownAnswer = "## Results\n\nYour **HbA1c** is in range.\n\n" +
	"| Test | Value |\n|---|---:|\n| HbA1c | 5.2 % |\n| LDL | 2.9 mmol/L |\n\n" +
	"```js\nconst x = 1;\n```\n\n- first point\n- second point\n\n" +
	"See [the guide](https://example.com/guide) and [this](javascript:window.__pwned=3).\n\n" +
	"<img src=x onerror=\"window.__pwned = 1\"> <script>window.__pwned = 2</script>\n"

// renderedMarkdown describes the newest assistant message's Markdown.
const renderedMarkdown = `(() => {
  const turns = document.querySelectorAll("#transcript .msg-assistant");
  const m = turns[turns.length - 1];
  const links = [...m.querySelectorAll(".md a")].map((a) => ({ text: a.textContent, href: a.getAttribute("href") || "",
    target: a.getAttribute("target") || "", rel: a.getAttribute("rel") || "" }));
  return {
    heading: m.querySelector(".md h2")?.textContent || "",
    bold: [...m.querySelectorAll(".md strong")].map((e) => e.textContent),
    cells: [...m.querySelectorAll(".md table td")].map((e) => e.textContent),
    aligns: [...m.querySelectorAll(".md table td")].map((e) => e.getAttribute("align") + ":" + getComputedStyle(e).textAlign),
    code: m.querySelector(".md .code-block pre code")?.textContent || "",
    copy: m.querySelectorAll(".md .code-block button.copy-code").length,
    items: m.querySelectorAll(".md li").length,
    links,
    text: m.querySelector(".md").textContent,
    markup: document.querySelectorAll("#transcript img, #transcript script, #transcript [onerror]").length,
    pwned: window.__pwned ?? null,
  };
})()`

type mdView struct {
	Heading string   `json:"heading"`
	Bold    []string `json:"bold"`
	Cells   []string `json:"cells"`
	Aligns  []string `json:"aligns"`
	Code    string   `json:"code"`
	Copy    int      `json:"copy"`
	Items   int      `json:"items"`
	Links   []struct {
		Text, Href, Target, Rel string
	} `json:"links"`
	Text   string `json:"text"`
	Markup int    `json:"markup"`
	Pwned  any    `json:"pwned"`
}

// offScreen lists the visible elements that reach past the viewport's
// sides, after clipping each by the scrolling boxes it sits in.
const offScreen = `(() => {
  const W = document.documentElement.clientWidth;
  const bad = [];
  for (const el of document.querySelectorAll("body *")) {
    if (!el.checkVisibility({ visibilityProperty: true })) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    let left = r.left, right = r.right;
    for (let p = el.parentElement; p; p = p.parentElement) {
      if (getComputedStyle(p).overflowX === "visible") continue;
      const pr = p.getBoundingClientRect();
      left = Math.max(left, pr.left);
      right = Math.min(right, pr.right);
    }
    if (right <= left) continue;
    if (left < -1 || right > W + 1) {
      bad.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className ? "." + String(el.className).replace(/ /g, ".") : "") +
        " " + Math.round(left) + ".." + Math.round(right));
    }
  }
  return { width: W, scroll: document.documentElement.scrollWidth, bad: bad.slice(0, 20) };
})()`

type layoutView struct {
	Width  int      `json:"width"`
	Scroll int      `json:"scroll"`
	Bad    []string `json:"bad"`
}

// checkInside fails the test if anything on the page leaves the screen.
func checkInside(t *testing.T, b *browser, page string) {
	t.Helper()
	v := eval[layoutView](b, offScreen)
	if len(v.Bad) > 0 || v.Scroll > v.Width {
		t.Errorf("%s at %d px: page %d px wide, elements off-screen: %v", page, v.Width, v.Scroll, v.Bad)
	}
}

// evalAwait evaluates a JavaScript expression whose value is a promise.
func evalAwait[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// signIn opens the app and signs in with the stack's key.
func signIn(b *browser, st *chatStack) {
	b.t.Helper()
	b.do("signing in",
		chromedp.Navigate(st.URL+"/app/"),
		chromedp.WaitVisible(chromedp.ID("login-key")),
		chromedp.SendKeys(chromedp.ID("login-key"), st.Key),
		chromedp.Click(chromedp.ID("login-submit")),
		chromedp.WaitVisible(chromedp.ID("composer-input")),
	)
}

// ask sends a question from the composer.
func ask(b *browser, question string) {
	b.t.Helper()
	b.do("sending "+question,
		chromedp.SendKeys(chromedp.ID("composer-input"), question),
		chromedp.Click(chromedp.ID("composer-send")),
	)
}

const lastFinish = `(() => { const t = document.querySelectorAll("#transcript .msg-assistant"); return t.length ? t[t.length - 1].dataset.finish || "" : ""; })()`

// TestWebChat drives the chat in headless Chromium: a streamed Markdown
// answer renders as Markdown with its markup inert; Stop, then Send,
// continues the same session with the model seeing the stopped question;
// sessions get short titles and are renamed in the sidebar; and at 390 px
// the sidebar is a drawer and no page reaches past the screen.
func TestWebChat(t *testing.T) {
	asked := make(chan struct{})
	var askedOnce sync.Once
	var mu sync.Mutex
	var resumed []string // the user messages of the turn after the stop
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		switch q := r.LastUser(); {
		case q == "markdown please":
			return scripted.Step{Text: markdownAnswer}, nil
		case strings.HasPrefix(q, "Please keep thinking"):
			askedOnce.Do(func() { close(asked) })
			// Held until the page stops the turn (the request is cancelled).
			return scripted.Step{Text: "This answer never arrives.", Delay: 2 * time.Minute}, nil
		case q == "stopped at once":
			// Held too: Stop cancels the run on the server, and a run that
			// already answered would (rightly) keep its answer.
			return scripted.Step{Text: "This answer never arrives either.", Delay: 2 * time.Minute}, nil
		case q == "after stop":
			mu.Lock()
			for _, m := range r.Messages {
				if m.Role == "user" {
					resumed = append(resumed, m.Content)
				}
			}
			mu.Unlock()
			return scripted.Step{Text: "I remember the question you stopped."}, nil
		}
		return scripted.Step{Text: "ok"}, nil
	})
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, func(c *conf.Config) { c.Provider = "oa" })
	b := startBrowser(t)
	signIn(b, st)
	for _, perm := range []string{"clipboard-read", "clipboard-write"} {
		if _, err := chromedp.CallBrowser(b.ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
			Permission: &cdpbrowser.PermissionDescriptor{Name: perm}, Setting: cdpbrowser.PermissionSettingGranted, Origin: st.URL}); err != nil {
			t.Fatalf("granting %s: %v", perm, err)
		}
	}

	// Markdown: rendered, links made safe, markup inert.
	ask(b, "markdown please")
	b.waitFor("the Markdown answer ends", lastFinish+` === "stop"`)
	md := eval[mdView](b, renderedMarkdown)
	if md.Heading != "Results" || len(md.Bold) != 1 || md.Bold[0] != "HbA1c" || md.Items != 2 || md.Code != "const x = 1;\n" || md.Copy != 1 {
		t.Errorf("rendered Markdown %+v", md)
	}
	if strings.Join(md.Cells, "|") != "HbA1c|5.2 %|LDL|2.9 mmol/L" {
		t.Errorf("table cells %q", md.Cells)
	}
	if strings.Join(md.Aligns, " ") != "null:left right:right null:left right:right" {
		t.Errorf("table alignment %q: want the ---: column right-aligned", md.Aligns)
	}
	if len(md.Links) != 2 || md.Links[0].Href != "https://example.com/guide" || md.Links[0].Target != "_blank" || md.Links[0].Rel != "noopener noreferrer" ||
		md.Links[1].Href != "" {
		t.Errorf("links %+v: want the https one opening safely and the javascript: one without an href", md.Links)
	}
	if md.Markup != 0 || md.Pwned != nil || !strings.Contains(md.Text, `<img src=x onerror="window.__pwned = 1">`) {
		t.Errorf("model markup ran or became elements: %d elements, flag %v, text %q", md.Markup, md.Pwned, md.Text)
	}
	b.do("copying the code", chromedp.Click(chromedp.CSS(`.md .code-block button.copy-code`)))
	b.waitFor("the code is copied", `document.querySelector(".md .code-block button.copy-code").textContent === "Copied"`)
	if got := evalAwait[string](b, `navigator.clipboard.readText()`); got != "const x = 1;\n" {
		t.Errorf("clipboard %q", got)
	}
	b.screenshot("markdown.png")

	// Stop, then send: the same session, and the model sees the question.
	b.do("starting a new chat", chromedp.Click(chromedp.ID("new-chat")))
	ask(b, "Please keep thinking about my iron levels and vitamin D results from last spring until I stop you")
	select {
	case <-asked:
	case <-time.After(time.Minute):
		t.Fatal("the slow question never reached the provider")
	}
	b.waitFor("the session is named", `location.hash.startsWith("#/chat/")`)
	b.do("stopping", chromedp.Click(chromedp.ID("composer-stop")))
	b.waitFor("the turn stops", lastFinish+` === "cancelled"`)
	hash := eval[string](b, `location.hash`)
	ask(b, "after stop")
	b.waitFor("the next turn ends", lastFinish+` === "stop"`)
	if got := eval[string](b, `location.hash`); got != hash {
		t.Errorf("after stop and send the page shows %s, want the same session %s", got, hash)
	}
	mu.Lock()
	seen := resumed
	mu.Unlock()
	if len(seen) != 2 || !strings.HasPrefix(seen[0], "Please keep thinking") || seen[1] != "after stop" {
		t.Errorf("the model saw the user messages %q, want the stopped question then the new one", seen)
	}
	b.waitFor("two sessions are listed", `document.querySelectorAll("#session-list li").length === 2`)
	sessionID := strings.TrimPrefix(hash, "#/chat/")
	code, body := httpGet(t, st.URL+"/api/sessions/"+sessionID, st.Key)
	var got sessions.SessionGetResponse
	if code != http.StatusOK || json.Unmarshal(body, &got) != nil || len(got.Turns) != 2 {
		t.Fatalf("GET the session: %d %s", code, body)
	}
	// The title is the question's start, cut at a word.
	if want := "Please keep thinking about my iron levels and vitamin D…"; got.Session.Title != want {
		t.Errorf("title %q, want %q", got.Session.Title, want)
	}

	// Stopped before any event came back (even before the request left):
	// the next question still goes to the session the page named.
	b.do("starting another chat", chromedp.Click(chromedp.ID("new-chat")))
	b.do("sending and stopping at once", chromedp.Evaluate[chromedp.Void](`(() => {
	  document.getElementById("composer-input").value = "stopped at once";
	  document.getElementById("composer").requestSubmit();
	  document.getElementById("composer-stop").click();
	})()`))
	b.waitFor("the turn stops at once", lastFinish+` === "cancelled"`)
	early := eval[string](b, `location.hash`)
	if early == hash || !strings.HasPrefix(early, "#/chat/") {
		t.Fatalf("a new chat stopped at once shows %q", early)
	}
	ask(b, "after an early stop")
	b.waitFor("the turn after the early stop ends", lastFinish+` === "stop"`)
	if got := eval[string](b, `location.hash`); got != early {
		t.Errorf("after an early stop the next turn went to %s, want %s", got, early)
	}
	b.waitFor("three sessions are listed", `document.querySelectorAll("#session-list li").length === 3`)
	b.do("back to the stopped session", chromedp.Navigate(st.URL+"/app/"+hash))
	b.waitFor("it opens", `document.querySelectorAll("#transcript .msg-assistant[data-finish]").length === 2`)

	// Rename in the sidebar.
	current := `#session-list li.current`
	b.do("renaming the session",
		chromedp.Click(chromedp.CSS(current+` button.rename`)),
		chromedp.WaitVisible(chromedp.CSS(current+` input.session-rename`)),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#session-list li.current input.session-rename").value = ""`),
		chromedp.SendKeys(chromedp.CSS(current+` input.session-rename`), "Iron and vitamin D\r"),
	)
	b.waitFor("the new title shows", `document.querySelector("#session-list li.current .session-title").textContent === "Iron and vitamin D"`)
	code, body = httpGet(t, st.URL+"/api/sessions/"+sessionID, st.Key)
	if code != http.StatusOK || json.Unmarshal(body, &got) != nil || got.Session.Title != "Iron and vitamin D" {
		t.Fatalf("GET the renamed session: %d %s", code, body)
	}
	if code, body := apiDo(t, http.MethodPatch, st.URL+"/api/sessions/"+sessionID, st.Key, `{"title":"  "}`); code != http.StatusBadRequest {
		t.Errorf("PATCH an empty title: %d %s", code, body)
	}
	if code, body := apiDo(t, http.MethodPatch, st.URL+"/api/sessions/nope", st.Key, `{"title":"x"}`); code != http.StatusNotFound {
		t.Errorf("PATCH an unknown session: %d %s", code, body)
	}
	b.screenshot("sessions.png")

	// 390 px: the sidebar is a drawer, and nothing leaves the screen.
	b.do("narrowing the window", chromedp.EmulateViewport(390, 844))
	b.waitFor("the sidebar folds away", `!document.getElementById("sessions").checkVisibility() && document.getElementById("sessions-toggle").checkVisibility()`)
	checkInside(t, b, "chat")
	b.screenshot("chat-390.png")
	b.do("opening the drawer", chromedp.Click(chromedp.ID("sessions-toggle")))
	b.waitFor("the drawer opens", `document.getElementById("sessions").checkVisibility()`)
	checkInside(t, b, "the session drawer")
	b.screenshot("drawer-390.png")
	b.do("opening the Markdown session from the drawer", chromedp.Click(chromedp.CSS(`#session-list li:last-child a`)))
	b.waitFor("the drawer closes on the other session", `!document.getElementById("sessions").checkVisibility() && document.querySelector("#transcript .md table") !== null`)
	checkInside(t, b, "a Markdown answer")
	b.screenshot("markdown-390.png")
	for _, view := range []string{"keys", "mcp", "data"} {
		b.do("opening "+view, chromedp.Navigate(st.URL+"/app/#/"+view))
		b.waitFor(view+" shows", `document.getElementById("view-`+view+`").checkVisibility()`)
		if view == "keys" {
			b.waitFor("the keys are listed", `document.querySelector("#keys-table tr[data-id] button") !== null`)
			if r := eval[float64](b, `document.querySelector("#keys-table tr[data-id] button").getBoundingClientRect().right`); r > 390 {
				t.Errorf("the Revoke button ends at %v px, past the 390 px screen", r)
			}
		}
		checkInside(t, b, view)
		b.screenshot(view + "-390.png")
	}
	b.noPageErrors()
}
