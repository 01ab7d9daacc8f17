package pgcluster

import (
	"bytes"
	"log/slog"
	"sync"
)

// lineLogger forwards the server's output to slog one line at a time and
// remembers the last line for startup errors.
type lineLogger struct {
	log  *slog.Logger
	mu   sync.Mutex
	buf  bytes.Buffer
	tail string
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for {
		line, err := l.buf.ReadString('\n')
		if err != nil {
			l.buf.WriteString(line) // incomplete line: keep for the next write
			return len(p), nil
		}
		line = line[:len(line)-1]
		l.tail = line
		if l.log != nil {
			l.log.Debug("postgres output", "line", line)
		}
	}
}

func (l *lineLogger) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tail
}
