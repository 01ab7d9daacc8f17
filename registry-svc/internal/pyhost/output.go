package pyhost

import (
	"bytes"
	"log/slog"
	"strconv"
	"time"

	"golang.org/x/time/rate"
)

// Caps on the tool output (print(), logging) a host forwards to the
// service log. Tools are tenant code: one printing without end must not
// fill the disk of whoever keeps the logs, nor drown other tenants' lines.
// Output is not tied to a call (the host's calls share its stdout), so the
// budget is per host stream; it bounds what any call, or all of a host's
// calls together, can add to the log.
const (
	// outputLineBytes is the longest line logged; the rest of a longer
	// line is counted (truncated_bytes), not logged.
	outputLineBytes = 4 << 10
	// outputBurstBytes and outputRateBytes (per second) are a stream's
	// budget of log bytes. Past it, lines are dropped and counted, and one
	// line says how many once the budget allows again (or the host ends).
	outputBurstBytes = 256 << 10
	outputRateBytes  = 16 << 10
	// outputLineCost is what a log record costs beyond its text (time,
	// level, message, attributes), so that empty lines are not free.
	outputLineCost = 128
)

// outputLog turns one output stream of a host into log lines within the
// caps above.
type outputLog struct {
	log    *slog.Logger
	stream string
	budget *rate.Limiter
	now    func() time.Time
	// line is the head of the line being read, at most outputLineBytes;
	// cut counts the bytes of it past the head.
	line []byte
	cut  int
	// droppedLines and droppedBytes count output refused by the budget
	// since it was last reported.
	droppedLines, droppedBytes int
}

func newOutputLog(log *slog.Logger, stream string) *outputLog {
	return &outputLog{log: log, stream: stream, now: time.Now,
		budget: rate.NewLimiter(rate.Limit(outputRateBytes), outputBurstBytes)}
}

// write takes the next piece of output; end says that it ends a line.
func (o *outputLog) write(p []byte, end bool) {
	if end {
		p = bytes.TrimRight(p, "\r\n")
	}
	take := min(outputLineBytes-len(o.line), len(p))
	o.line = append(o.line, p[:take]...)
	o.cut += len(p) - take
	if end {
		o.emit()
	}
}

// emit logs the line read so far, if the budget allows, and starts the
// next one.
func (o *outputLog) emit() {
	text := string(o.line)
	// The quoted length is what the text costs once escaped in a log
	// record: a line of control bytes grows sixfold.
	if !o.budget.AllowN(o.now(), len(strconv.Quote(text))+outputLineCost) {
		o.droppedLines++
		o.droppedBytes += len(o.line) + o.cut
	} else {
		o.reportDropped()
		attrs := []any{"stream", o.stream, "line", text}
		if o.cut > 0 {
			attrs = append(attrs, "truncated_bytes", o.cut)
		}
		o.log.Info("tool host output", attrs...)
	}
	o.line, o.cut = o.line[:0], 0
}

// reportDropped logs how much output the budget refused since the last
// report.
func (o *outputLog) reportDropped() {
	if o.droppedLines == 0 {
		return
	}
	o.log.Warn("tool host output over its log budget was dropped", "stream", o.stream,
		"dropped_lines", o.droppedLines, "dropped_bytes", o.droppedBytes)
	o.droppedLines, o.droppedBytes = 0, 0
}

// close logs an unfinished last line and what was dropped, when the
// stream ends.
func (o *outputLog) close() {
	if len(o.line)+o.cut > 0 {
		o.emit()
	}
	o.reportDropped()
}
