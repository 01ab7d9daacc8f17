package stack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromiumInstall is how a machine gets the browser the web tests drive.
const chromiumInstall = "apt-get install -y chromium (or run deploy/scripts/ensure-deps.sh as root)"

// browser is one headless Chromium tab, with the page's script errors and
// policy violations collected.
type browser struct {
	t    *testing.T
	ctx  context.Context
	mu   sync.Mutex
	errs []string
}

// startBrowser launches headless Chromium for the test. A machine without
// it fails the test with the install command: the web app is not tested
// at all without a browser.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Fatalf("the web app tests need Chromium, which is not installed: %s", chromiumInstall)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	if os.Geteuid() == 0 {
		// Chromium refuses to start its sandbox as root, and CI and fresh
		// dev machines run the tests as root. The browser only ever loads
		// our own app from a loopback listener, so it runs unsandboxed
		// there; as any other user the sandbox stays on.
		opts = append(opts, chromedp.NoSandbox)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	b := &browser{t: t, ctx: ctx}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
		wg.Wait()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v (install: %s)", path, err, chromiumInstall)
	}
	exceptions := chromedp.Events(ctx, runtime.ExceptionThrown)
	entries := chromedp.Events(ctx, cdplog.EntryAdded)
	wg.Go(func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				msg += " " + d.Exception.Description
			}
			b.report(fmt.Sprintf("uncaught exception at %s:%d: %s", d.URL, d.LineNumber+1, msg))
		}
	})
	wg.Go(func() {
		for ev, err := range entries {
			if err != nil {
				return
			}
			// Failed requests are logged by the network source; the
			// tests provoke some (a 422 upload) on purpose.
			if e := ev.Entry; e.Source != cdplog.EntrySourceNetwork && (e.Level == cdplog.EntryLevelError || e.Source == cdplog.EntrySourceSecurity) {
				b.report(fmt.Sprintf("%s %s: %s (%s)", e.Source, e.Level, e.Text, e.URL))
			}
		}
	})
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("enabling the browser log: %v", err)
	}
	return b
}

func (b *browser) report(msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.errs = append(b.errs, msg)
}

// errors returns what the page reported so far.
func (b *browser) errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errs...)
}

// do runs steps with a deadline; on failure it saves a screenshot next to
// the test's other artifacts and fails the test naming the step.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 90*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.screenshot("failed.png")
		b.t.Fatalf("%s: %v (page errors: %v)", what, err, b.errors())
	}
}

// eval evaluates a JavaScript expression and decodes its value.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript predicate until it holds.
func (b *browser) waitFor(what, predicate string) {
	b.t.Helper()
	b.do(what, chromedp.Action[chromedp.Void](chromedp.Poll[chromedp.Void](predicate, chromedp.WithPollingTimeout(60*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))))
}

// screenshot saves the viewport as a PNG in the test's artifact directory
// (kept with `go test -artifacts`) and returns its path.
func (b *browser) screenshot(name string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return ""
	}
	path := filepath.Join(b.t.ArtifactDir(), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Errorf("saving %s: %v", path, err)
	}
	b.t.Logf("screenshot: %s", path)
	return path
}

// noPageErrors fails the test if the page threw or broke its policy.
func (b *browser) noPageErrors() {
	b.t.Helper()
	if errs := b.errors(); len(errs) > 0 {
		b.t.Errorf("the page reported errors:\n%s", strings.Join(errs, "\n"))
	}
}
