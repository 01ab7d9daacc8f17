package stack

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/conf"
)

// TestWebChatApproval: a tool call that needs approval (INTERRUPT_ON_DEEP)
// shows its arguments with Approve, Run edited and Reject; editing the
// arguments runs the call with them, and rejecting gives the model the
// reason, and either way the turn goes on in the same message.
func TestWebChatApproval(t *testing.T) {
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		if r.StepsSinceUser() == 0 {
			return scripted.Step{Calls: []scripted.Call{{Name: "write_file", Args: `{"file_path":"/draft.md","content":"draft"}`}}}, nil
		}
		res := r.ToolResults()
		return scripted.Step{Text: "tool said: " + res[len(res)-1].Content}, nil
	})
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, func(c *conf.Config) {
		c.Provider = "oa"
		c.InterruptOnDeep = []string{"write_file"}
	})
	b := startBrowser(t)
	signIn(b, st)

	ask(b, "write a draft")
	b.waitFor("the approval shows", `document.querySelector("#transcript .approval[data-tool=write_file] .approval-args")?.value.includes("draft")`)
	b.screenshot("approval.png")
	b.do("editing the arguments", chromedp.Evaluate[chromedp.Void](`(() => {
	  const box = document.querySelector("#transcript .approval .approval-args");
	  box.value = JSON.stringify({ file_path: "/draft.md", content: "edited by the user" });
	})()`), chromedp.Click(chromedp.CSS(`#transcript .approval .approval-edit`)))
	b.waitFor("the edited call runs and the turn ends", lastFinish+` === "stop"`)
	if got := eval[string](b, `document.querySelector("#transcript .msg-assistant:last-child .tool-input")?.textContent || ""`); !strings.Contains(got, "edited by the user") {
		t.Errorf("the tool call card shows %q, want the edited arguments", got)
	}

	b.do("starting a new chat", chromedp.Click(chromedp.ID("new-chat")))
	ask(b, "write another")
	b.waitFor("the second approval shows", `document.querySelectorAll("#transcript .approval").length === 1`)
	b.do("rejecting", chromedp.SendKeys(chromedp.CSS(`#transcript .approval .approval-reason`), "not now"),
		chromedp.Click(chromedp.CSS(`#transcript .approval .approval-reject`)))
	b.waitFor("the turn ends after the rejection", lastFinish+` === "stop"`)
	if got := eval[string](b, `document.querySelector("#transcript .msg-assistant:last-child .msg-body").textContent`); !strings.Contains(got, "The user rejected this tool call: not now") {
		t.Errorf("the turn after the rejection shows %q", got)
	}
}
