package stack

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/conf"
)

// TestWebAttachments drives the lab-report flow in headless Chromium with
// the scripted provider's Demo: a PDF and an image attached with the file
// picker reach the provider natively, the proposal renders as a table,
// "yes" imports the indicators, the next answer charts them with uPlot,
// and the session gets its generated title in the sidebar. A file pasted
// into the composer is queued too.
func TestWebAttachments(t *testing.T) {
	srv := scripted.New(scripted.Demo)
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, func(c *conf.Config) {
		c.Provider = "oa"
		c.SessionTitles = true
	})
	dir := t.TempDir()
	pdfPath, err := filepath.Abs("testdata/lab-report.pdf")
	must(t, err)
	pdf, err := os.ReadFile(pdfPath)
	must(t, err)
	img := testPNG(t)
	imgPath := filepath.Join(dir, "scan.png")
	must(t, os.WriteFile(imgPath, img, 0o600))

	b := startBrowser(t)
	signIn(b, st)
	b.do("attaching a PDF and an image", chromedp.SetUploadFiles(chromedp.ID("composer-file"), []string{pdfPath, imgPath}))
	b.waitFor("the files are listed", `document.querySelectorAll("#composer-files li").length === 2`)
	b.screenshot("attach-queued.png")
	ask(b, "Please read my lab report")
	b.waitFor("the proposal ends", lastFinish+` === "stop"`)
	rec := lastOf(t, srv, scripted.FormatOpenAI)
	if len(rec.Parts) != 2 || rec.Parts[0].Kind != "file" || rec.Parts[0].MediaType != "application/pdf" || !bytes.Equal(rec.Parts[0].Data, pdf) ||
		rec.Parts[1].Kind != "image_url" || rec.Parts[1].MediaType != "image/png" || !bytes.Equal(rec.Parts[1].Data, img) {
		t.Errorf("the provider got the parts %+v, want the PDF as a file part and the image as an image_url part", rec.Parts)
	}
	if n := eval[int](b, `document.querySelectorAll("#composer-files li").length`); n != 0 {
		t.Errorf("%d files still queued after sending", n)
	}
	files := eval[string](b, `[...document.querySelectorAll("#transcript .msg-user .file-chip")].map((e) => e.textContent).join("|")`)
	if files != "lab-report.pdf|scan.png" {
		t.Errorf("the message shows the files %q", files)
	}
	cells := eval[string](b, `[...document.querySelectorAll("#transcript .msg-assistant .md table td")].map((e) => e.textContent).join("|")`)
	if !strings.Contains(cells, "Glucose|5.4|mmol/L|2026-03-14") {
		t.Errorf("the proposal table %q", cells)
	}
	b.waitFor("the generated title shows", `document.querySelector("#session-list li.current .session-title")?.textContent === "Demo: Please read my lab"`)
	if got := eval[string](b, `document.getElementById("chat-title").textContent`); got != "Demo: Please read my lab" {
		t.Errorf("the chat bar shows %q", got)
	}
	b.screenshot("attach-proposal.png")

	ask(b, "yes")
	b.waitFor("the import ends", `document.querySelectorAll("#transcript .msg-assistant[data-finish=stop]").length === 2`)
	if got := eval[string](b, `document.querySelector("#transcript .msg-assistant:last-child .tool-call")?.dataset.tool || ""`); got != "import_health_indicators" {
		t.Errorf("the confirming turn called %q", got)
	}
	ask(b, "Chart my results")
	b.waitFor("the chart turn ends", `document.querySelectorAll("#transcript .msg-assistant[data-finish=stop]").length === 3`)
	b.waitFor("the chart draws", `document.querySelectorAll("#transcript .chat-chart .plot canvas").length >= 3`)
	series := eval[string](b, `[...document.querySelectorAll("#transcript .chat-chart .plot")].map((e) => e.dataset.series).join("|")`)
	if series != "Glucose|HbA1c|LDL" {
		t.Errorf("chart series %q", series)
	}
	b.do("scrolling to the chart", chromedp.Evaluate[chromedp.Void](`document.querySelector("#transcript .chat-chart").scrollIntoView({ block: "end" })`))
	evalAwait[bool](b, `new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))`)
	b.screenshot("attach-chart.png")

	// Reopened, the session shows the chart again from its saved events.
	b.do("reopening the session", chromedp.Reload())
	b.waitFor("the chart draws again", `document.querySelectorAll("#transcript .chat-chart .plot canvas").length >= 3`)
	if files := eval[string](b, `[...document.querySelectorAll("#transcript .msg-user .file-chip")].map((e) => e.textContent).join("|")`); files != "lab-report.pdf|scan.png" {
		t.Errorf("the reopened session shows the files %q", files)
	}

	// A pasted file is queued like a picked one.
	b.do("pasting a file", chromedp.Evaluate[chromedp.Void](`(() => {
	  const dt = new DataTransfer();
	  dt.items.add(new File(["indicator,value\n"], "pasted.csv", { type: "text/csv" }));
	  document.getElementById("composer-input").dispatchEvent(new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true }));
	})()`))
	b.waitFor("the pasted file is listed", `document.querySelector("#composer-files li")?.dataset.name === "pasted.csv"`)
	// A file dropped on the chat is queued too.
	b.do("dropping a file", chromedp.Evaluate[chromedp.Void](`(() => {
	  const dt = new DataTransfer();
	  dt.items.add(new File(["# notes\n"], "dropped.md", { type: "text/markdown" }));
	  const t = document.getElementById("transcript");
	  t.dispatchEvent(new DragEvent("dragover", { dataTransfer: dt, bubbles: true, cancelable: true }));
	  t.dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
	})()`))
	b.waitFor("the dropped file is listed", `[...document.querySelectorAll("#composer-files li")].map((e) => e.dataset.name).join("|") === "pasted.csv|dropped.md"`)
	if eval[bool](b, `document.getElementById("view-chat").classList.contains("dropping")`) {
		t.Error("the drop highlight stays after the drop")
	}
	b.noPageErrors()
}
