// Package telemetry sets up logging (slog with trace ids), tracing (one
// OpenTelemetry tracer provider per service, OTLP when configured) and the
// Prometheus registry each binary serves at /metrics.
package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/term"
)

// LogOptions configures NewLogger.
type LogOptions struct {
	// Level is debug, info, warn or error; empty means info.
	Level string
	// Format is json, text or auto (text on a terminal, JSON otherwise).
	Format string
	// Writer receives the log lines; nil means os.Stderr.
	Writer io.Writer
}

// ParseLevel maps a level name to a slog.Level.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if s == "" {
		return slog.LevelInfo, nil
	}
	if err := l.UnmarshalText([]byte(strings.ToUpper(s))); err != nil {
		return 0, fmt.Errorf("parsing log level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// NewLogger returns a slog.Logger whose lines carry trace_id and span_id
// whenever the context holds a span.
func NewLogger(opts LogOptions) (*slog.Logger, error) {
	level, err := ParseLevel(opts.Level)
	if err != nil {
		return nil, err
	}
	w := opts.Writer
	if w == nil {
		w = os.Stderr
	}
	hopts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch opts.Format {
	case "json":
		h = slog.NewJSONHandler(w, hopts)
	case "text":
		h = slog.NewTextHandler(w, hopts)
	case "", "auto":
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			h = slog.NewTextHandler(w, hopts)
		} else {
			h = slog.NewJSONHandler(w, hopts)
		}
	default:
		return nil, fmt.Errorf("unknown log format %q: want json, text or auto", opts.Format)
	}
	return slog.New(traceHandler{h}), nil
}

// traceHandler adds the trace and span ids of the context's span.
type traceHandler struct{ slog.Handler }

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return traceHandler{h.Handler.WithAttrs(attrs)}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.Handler.WithGroup(name)}
}
