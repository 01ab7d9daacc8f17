package servicetest

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
)

// LogBuffer holds the text lines a CaptureLogger wrote, for assertions.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything logged so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// CaptureLogger returns a logger that writes into t's log, like Logger, and
// also keeps its lines (text format, debug level) in the returned buffer.
func CaptureLogger(t testing.TB) (*slog.Logger, *LogBuffer) {
	t.Helper()
	lb := &LogBuffer{}
	capture := slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})
	return slog.New(slog.NewMultiHandler(capture, Logger(t).Handler())), lb
}
