package mcpserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/registry"
)

// logLevelNames are the MCP (RFC 5424) log levels, least severe first.
var logLevelNames = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// subjectLogLevel tells every gateway replica the log level a legacy
// session set with logging/setLevel (gateway/design.md "Logging").
const subjectLogLevel = "events.gateway.session_log_level"

// logLevelSet is the event on subjectLogLevel.
type logLevelSet struct {
	Nonce string    `json:"nonce"`
	Level string    `json:"level"`
	Until time.Time `json:"until"`
}

// logLevels holds the levels legacy sessions asked for, by session nonce,
// until the session would expire. Like revocations, a replica learns them
// from subjectLogLevel; a replica started later does not know them.
type logLevels struct {
	mu  sync.Mutex
	m   map[string]logLevelSet
	now func() time.Time
}

// newLogLevels subscribes to subjectLogLevel on nc.
func newLogLevels(nc *nats.Conn) (*logLevels, error) {
	l := &logLevels{m: map[string]logLevelSet{}, now: time.Now}
	if _, err := nc.Subscribe(subjectLogLevel, func(msg *nats.Msg) {
		var ev logLevelSet
		if json.Unmarshal(msg.Data, &ev) == nil && ev.Nonce != "" && slices.Contains(logLevelNames, ev.Level) {
			l.set(ev)
		}
	}); err != nil {
		return nil, fmt.Errorf("subscribing to %s: %w", subjectLogLevel, err)
	}
	return l, nil
}

func (l *logLevels) set(ev logLevelSet) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for n, e := range l.m {
		if now.After(e.Until) {
			delete(l.m, n)
		}
	}
	l.m[ev.Nonce] = ev
}

func (l *logLevels) get(nonce string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[nonce].Level
}

// setLevel serves the legacy logging/setLevel: the level holds for the
// session's later tool calls, on every replica. Without a session there is
// nothing to hold it, and tools send no logs.
func (m *Server) setLevel(q *request, msg *rpcMessage) (any, *rpcError) {
	var p mcp.SetLoggingLevelParams
	if err := json.Unmarshal(msg.Params, &p); err != nil || !slices.Contains(logLevelNames, string(p.Level)) {
		return nil, newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "invalid params: level must be one of %v", logLevelNames)
	}
	if q.session != nil {
		ev := logLevelSet{Nonce: q.session.Nonce, Level: string(p.Level), Until: m.sealer.expiry(q.session)}
		m.levels.set(ev)
		if b, err := json.Marshal(ev); err == nil {
			// Flushed before the reply, so that the session's next call
			// most likely finds the level on whichever replica serves it.
			if err := m.Conn.Publish(subjectLogLevel, b); err != nil {
				m.Log.WarnContext(q.r.Context(), "publishing a session log level failed", "err", err)
			} else if err := m.Conn.Flush(); err != nil {
				m.Log.WarnContext(q.r.Context(), "flushing a session log level failed", "err", err)
			}
		}
	}
	return struct{}{}, nil
}

// logLevel is the lowest level of log records the request wants from its
// tool: the modern era names it per request in _meta, the legacy era per
// session (logging/setLevel). "" means none.
func (m *Server) logLevel(q *request, meta map[string]json.RawMessage) string {
	if q.modern {
		if l := metaString(meta, mcp.MetaKeyLogLevel); slices.Contains(logLevelNames, l) {
			return l
		}
		return ""
	}
	if q.session == nil {
		return ""
	}
	return m.levels.get(q.session.Nonce)
}

// logMessage is the notifications/message of a tool's log record.
func logMessage(rec *registry.LogRecord) rpcNotification {
	data := rec.Data
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	return rpcNotification{JSONRPC: "2.0", Method: "notifications/message", Params: &mcp.LoggingMessageParams{
		Level: mcp.LoggingLevel(rec.Level), Logger: rec.Logger, Data: data}}
}
