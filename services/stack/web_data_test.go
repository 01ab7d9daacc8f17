package stack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
)

// dataView describes the Data page's overview.
const dataView = `(() => {
  const rows = (sel) => [...document.querySelectorAll(sel)].map((e) => e.dataset);
  return {
    kinds: rows("#data-overview tr[data-kind]").map((d) => d.kind),
    imports: rows("#data-overview tr[data-import]").map((d) => d.import),
    charts: rows("#data-overview .card.chart").map((d) => d.indicator),
    canvases: document.querySelectorAll("#data-overview .card.chart canvas").length,
    units: rows("#data-overview .plot").map((d) => d.unit),
    empty: document.getElementById("data-empty") !== null,
    error: document.getElementById("data-error").textContent,
  };
})()`

type dataPageView struct {
	Kinds    []string `json:"kinds"`
	Imports  []string `json:"imports"`
	Charts   []string `json:"charts"`
	Canvases int      `json:"canvases"`
	Units    []string `json:"units"`
	Empty    bool     `json:"empty"`
	Error    string   `json:"error"`
}

// TestWebData drives the Data page in headless Chromium: a PDF is refused
// with the accepted formats named, imported health and genetic data are
// listed with a uPlot chart per indicator (one per unit), and deleting one
// import and then a whole kind, each confirmed by a second click, empties
// the list. The page must report no CSP violation (uPlot styles through
// the CSSOM only). Screenshots go to the test's artifact directory.
func TestWebData(t *testing.T) {
	srv := scripted.New(scripted.Demo)
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, nil)
	b := startBrowser(t)
	signIn(b, st)

	b.do("opening the data page", chromedp.Click(chromedp.CSS(`#nav a[data-view="data"]`)), chromedp.WaitVisible(chromedp.ID("health-form")))
	b.waitFor("an empty account says so", `document.getElementById("data-empty") !== null`)

	pdf := filepath.Join(t.TempDir(), "lab-report.pdf")
	must(t, os.WriteFile(pdf, []byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n"), 0o644))
	b.do("uploading a PDF", chromedp.SetUploadFiles(chromedp.ID("health-file"), []string{pdf}), chromedp.Click(chromedp.ID("health-upload")))
	b.waitFor("the PDF is refused", `document.querySelector("#health-result.failed") !== null`)
	if got := eval[string](b, `document.getElementById("health-result").textContent`); !strings.Contains(got, "application/pdf") || !strings.Contains(got, "CSV") {
		t.Errorf("PDF refusal reads %q", got)
	}

	csv, err := filepath.Abs("../../examples/health.csv")
	must(t, err)
	later := filepath.Join(t.TempDir(), "later.csv")
	must(t, os.WriteFile(later, []byte("indicator,value,unit,time\nHeart rate,66,bpm,2026-04-01T08:00:00Z\n"), 0o644))
	genome, err := filepath.Abs("../../examples/genome_23andme.txt")
	must(t, err)
	for _, up := range []struct{ kind, file, result string }{{"health", csv, "Imported 30 "}, {"health", later, "Imported 1 "}, {"genetic", genome, "Imported "}} {
		b.do("uploading "+filepath.Base(up.file), chromedp.SetUploadFiles(chromedp.ID(up.kind+"-file"), []string{up.file}), chromedp.Click(chromedp.ID(up.kind+"-upload")))
		b.waitFor(filepath.Base(up.file)+" is imported", `document.querySelector("#`+up.kind+`-result.ok")?.textContent.startsWith("`+up.result+`")`)
	}
	b.waitFor("three imports and every chart are shown", `document.querySelectorAll("#data-overview tr[data-import]").length === 3 &&
	  document.querySelector("#data-overview .card.chart:not([data-drawn])") === null &&
	  document.querySelectorAll("#data-overview .card.chart canvas").length === document.querySelectorAll("#data-overview .plot").length &&
	  document.querySelectorAll("#data-overview .plot").length > 0`)
	v := eval[dataPageView](b, dataView)
	if strings.Join(v.Kinds, ",") != "health,genetic" || len(v.Charts) != 18 || len(v.Units) != 19 || v.Canvases != 19 || v.Error != "" {
		t.Fatalf("data page: %+v", v)
	}
	// Glucose is stored in two units: two charts, each labelled with its unit.
	if got := eval[[]string](b, `[...document.querySelectorAll('.card.chart[data-indicator="Glucose"] .plot')].map((e) => e.dataset.unit)`); strings.Join(got, ",") != "mmol/L,mg/dL" {
		t.Errorf("Glucose charts in units %v", got)
	}
	if got := eval[string](b, `document.querySelector('.card.chart[data-indicator="Heart rate"] .u-legend').textContent`); !strings.Contains(got, "Heart rate (bpm)") {
		t.Errorf("Heart rate legend %q", got)
	}
	b.do("scrolling to the charts", chromedp.Evaluate[chromedp.Void](`document.querySelector("#data-overview h3").scrollIntoView()`))
	b.screenshot("data-charts.png")
	b.do("scrolling to the imports", chromedp.Evaluate[chromedp.Void](`document.querySelector("#data-overview tr[data-import]").scrollIntoView({ block: "center" })`))
	evalAwait[bool](b, `new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`) // a painted frame
	b.screenshot("data-imports.png")

	// Delete the newest health import (one Heart rate row): a first click
	// only arms the button.
	newest := `#data-overview tr[data-import="` + v.Imports[1] + `"] button`
	b.do("arming the delete", chromedp.Click(chromedp.CSS(newest)))
	if got := eval[string](b, `document.querySelector('`+newest+`').textContent`); got != "Really delete?" || len(eval[dataPageView](b, dataView).Imports) != 3 {
		t.Fatalf("the first click did not only ask: %q", got)
	}
	b.do("confirming the delete", chromedp.Click(chromedp.CSS(newest)))
	b.waitFor("the import is gone", `document.querySelectorAll("#data-overview tr[data-import]").length === 2`)
	if got := eval[string](b, `document.querySelector('.card.chart[data-indicator="Heart rate"] p').textContent`); !strings.HasPrefix(got, "5 measurements") {
		t.Errorf("Heart rate after the delete: %q", got)
	}
	checkInside(t, b, "data")
	b.do("narrowing the window", chromedp.EmulateViewport(390, 844))
	b.waitFor("charts follow the width", `[...document.querySelectorAll("#data-overview canvas")].every((c) => c.getBoundingClientRect().right <= 390)`)
	checkInside(t, b, "data at 390 px")
	b.screenshot("data-390.png")
	b.do("widening the window", chromedp.EmulateViewport(1280, 900))

	allHealth := `#data-overview tr[data-kind="health"] button`
	b.do("deleting all health data", chromedp.Click(chromedp.CSS(allHealth)), chromedp.Click(chromedp.CSS(allHealth)))
	b.waitFor("only genetic data is left", `document.querySelectorAll("#data-overview tr[data-kind]").length === 1 && document.querySelectorAll("#data-overview .card.chart").length === 0`)
	allGenetic := `#data-overview tr[data-kind="genetic"] button`
	b.do("deleting all genetic data", chromedp.Click(chromedp.CSS(allGenetic)), chromedp.Click(chromedp.CSS(allGenetic)))
	b.waitFor("nothing is left", `document.getElementById("data-empty") !== null`)
	b.noPageErrors()
}
