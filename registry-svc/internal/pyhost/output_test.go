package pyhost

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/servicetest"
)

// TestToolOutputCapped is the regression test of issue 15 finding 8: a
// tool printing 30 MB grew the log by 63 MB. Now a line is cut at
// outputLineBytes and a host stream's log output stays within its budget,
// with the dropped output counted in one line.
func TestToolOutputCapped(t *testing.T) {
	p, _, lb := startPool(t, Options{Workers: 1}, "../../testdata/chatty")
	before := len(lb.String())
	start := time.Now()
	if _, err := call(t, p, context.Background(), "flood", `{"megabytes": 30}`); err != nil {
		t.Fatal(err)
	}
	// Close waits until the host's output is drained and logged.
	p.Close(context.Background())
	logs := lb.String()[before:]
	limit := outputBurstBytes + int(time.Since(start).Seconds()+1)*outputRateBytes + 64<<10
	if len(logs) > limit {
		t.Errorf("a tool printing 30 MB added %d bytes to the log, want at most %d", len(logs), limit)
	}
	for _, want := range []string{"line=xxxx", "truncated_bytes=", "dropped_lines="} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
}

// TestOutputLog checks the caps on a fixed clock: a long line is cut, the
// budget refuses lines past it and the refusal is reported once it
// allows again.
func TestOutputLog(t *testing.T) {
	log, lb := servicetest.CaptureLogger(t)
	o := newOutputLog(log, "stdout")
	now := time.Unix(0, 0)
	o.now = func() time.Time { return now }
	o.write([]byte(strings.Repeat("a", outputLineBytes)), false)
	o.write([]byte(strings.Repeat("a", 100)+"\n"), true)
	if got := lb.String(); !strings.Contains(got, "truncated_bytes=100") || strings.Count(got, "a") < outputLineBytes {
		t.Fatalf("a long line: %s", got)
	}
	lines := 0
	for range 2 * outputBurstBytes / 1000 {
		o.write([]byte(strings.Repeat("b", 1000)+"\n"), true)
		lines++
	}
	logged := strings.Count(lb.String(), "tool host output")
	if logged >= lines || o.droppedLines == 0 {
		t.Fatalf("%d of %d lines logged at one instant, want the budget to stop some", logged, lines)
	}
	now = now.Add(time.Second)
	o.write([]byte("after\n"), true)
	if got := lb.String(); !strings.Contains(got, "dropped_lines=") || !strings.Contains(got, "line=after") {
		t.Errorf("after the budget refilled: %s", got[len(got)-min(len(got), 400):])
	}
}
