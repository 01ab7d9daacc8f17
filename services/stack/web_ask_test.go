package stack

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestWebChatAsk: a Deep turn whose tool asks the user (mirobody.elicit)
// shows a form built from the question's schema (required marks,
// defaults, a select for the enum, a checkbox for the boolean); submitting
// it runs the tool again with the answer, and the turn goes on in the
// same message. Decline is an answer too.
func TestWebChatAsk(t *testing.T) {
	st, _ := askStack(t)
	b := startBrowser(t)
	signIn(b, st)

	ask(b, "book a table")
	form := `#transcript .ask[data-tool=book_table]`
	b.waitFor("the question shows", `document.querySelector("`+form+` .ask-message")?.textContent === "How should we book Chez Go?"`)
	if got := eval[string](b, `[...document.querySelectorAll("`+form+` .ask-field")].map(f => f.querySelector(".ask-input").name +
	  (f.querySelector(".ask-required") ? "*" : "") + "=" + (f.querySelector(".ask-input").type === "checkbox" ? f.querySelector(".ask-input").checked : f.querySelector(".ask-input").value)).join(" ")`); got != "name*= people*=2 seating= vegetarian=false" {
		t.Errorf("the form's fields: %q", got)
	}
	b.do("filling the form",
		chromedp.SendKeys(chromedp.CSS(form+` input[name=name]`), "Ada"),
		chromedp.SetValue(chromedp.CSS(form+` select[name=seating]`), "outside"),
		chromedp.Click(chromedp.CSS(form+` input[name=vegetarian]`)),
	)
	b.screenshot("ask.png")
	b.do("submitting", chromedp.Click(chromedp.CSS(form+` .ask-submit`)))
	b.waitFor("the tool runs again and the turn ends", lastFinish+` === "stop"`)
	want := "tool said: booked Chez Go: Ada x2 outside vegetarian=True (hello)"
	if got := eval[string](b, `document.querySelector("#transcript .msg-assistant:last-child .msg-body").textContent`); !strings.Contains(got, want) {
		t.Errorf("the turn after the answer shows %q, want %q", got, want)
	}
	if n := eval[int](b, `document.querySelectorAll("#transcript .msg-assistant:last-child .tool-call").length`); n != 1 {
		t.Errorf("%d tool call cards, want the one that asked", n)
	}
	b.screenshot("ask-answered.png")

	b.do("starting a new chat", chromedp.Click(chromedp.ID("new-chat")))
	ask(b, "book another")
	b.waitFor("the second question shows", `document.querySelectorAll("#transcript .ask").length === 1`)
	b.do("declining", chromedp.Click(chromedp.CSS(`#transcript .ask .ask-decline`)))
	b.waitFor("the turn ends after declining", lastFinish+` === "stop"`)
	if got := eval[string](b, `document.querySelector("#transcript .msg-assistant:last-child .msg-body").textContent`); !strings.Contains(got, "not booked: decline") {
		t.Errorf("the turn after declining shows %q", got)
	}
	b.noPageErrors()
}
