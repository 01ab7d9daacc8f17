package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/gateway/internal/authn"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/wire"
)

// callResult is tools/call's result: the registry's CallToolResult, plus
// resultType in the modern era.
type callResult struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	IsError           bool              `json:"isError,omitempty"`
	ResultType        string            `json:"resultType,omitempty"`
}

// callParams is tools/call's params.
type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      json.RawMessage `json:"_meta"`
	// InputResponses and RequestState carry a modern client's answers to
	// a tool's questions; modernInputs checks their types, so that a wrong
	// one is not reported as a missing tool name.
	InputResponses json.RawMessage `json:"inputResponses"`
	RequestState   json.RawMessage `json:"requestState"`
}

// callTool serves a single tools/call. The reply is plain JSON unless the
// client accepts SSE and the call sends it something first: progress (when
// it sent a progress token), log records (when it asked for a level), or,
// in the legacy era, the tool's questions. Then the reply turns into an
// event stream at the first of them, and the result is its last event.
// Deciding late keeps the 401 of an anonymous call a real HTTP 401.
func (m *Server) callTool(w http.ResponseWriter, q *request, msg *rpcMessage) {
	if m.callAsTask(w, q, msg) {
		return
	}
	var out *replyStream
	if q.sse {
		out = &replyStream{w: w}
	}
	res, e := m.call(q.r.Context(), q, msg, out)
	if out != nil && out.finish(msg.ID, res, e) {
		return
	}
	if e != nil {
		writeRPCError(w, msg.ID, e)
		return
	}
	writeJSON(w, http.StatusOK, rpcResponse{JSONRPC: "2.0", ID: msg.ID, Result: res})
}

// replyStream is a reply that becomes an event stream at its first
// message; send may be called from several goroutines.
type replyStream struct {
	mu   sync.Mutex
	w    http.ResponseWriter
	sse  *sseWriter
	done bool // the reply is written: late messages are dropped
}

// errReplyDone is what send returns once the reply is written.
var errReplyDone = errors.New("the reply is already written")

// send writes v as an event, starting the stream if need be.
func (s *replyStream) send(v any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return errReplyDone
	}
	if s.sse == nil {
		s.sse = startSSE(s.w)
	}
	return s.sse.send(v)
}

// finish ends the reply: when it is a stream, the response is its last
// event and finish reports true; otherwise the caller writes it.
func (s *replyStream) finish(id json.RawMessage, res any, e *rpcError) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	if s.sse == nil {
		return false
	}
	_ = s.sse.send(response(id, res, e))
	return true
}

// progressToken returns params._meta.progressToken, or nil.
func progressToken(meta map[string]json.RawMessage) any {
	raw, ok := meta["progressToken"]
	if !ok {
		return nil
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil || v == nil {
		return nil
	}
	return v
}

// call runs the tool of a tools/call through the registry (run), with what
// the request tells of its client: its progress token, the log level it
// wants, and what it can answer when the tool asks. Progress and log
// records go to out, when set (the client reads an event stream).
func (m *Server) call(ctx context.Context, q *request, msg *rpcMessage, out *replyStream) (any, *rpcError) {
	p := &msg.call
	if msg.callErr != nil || p.Name == "" {
		return nil, newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "invalid params: tools/call needs a tool name")
	}
	cio := callIO{out: out, token: progressToken(msg.meta), caps: clientCapabilities(q, msg.meta)}
	if out != nil {
		cio.level = m.logLevel(q, msg.meta)
	}
	return m.run(ctx, q, p, callID(q, msg.ID), cio)
}

// callIO is what a call reaches of its client besides the result. A task's
// call has background set and nothing else: no stream, and nobody there to
// answer a tool's question (design.md "Tasks").
type callIO struct {
	// out is the reply's event stream, nil when the reply is plain JSON.
	out *replyStream
	// token is the client's progress token, nil when none.
	token any
	// level is the lowest log level the client wants, "" for none.
	level string
	// caps are what the client can answer (registry.CallRequest's
	// ClientCapabilities).
	caps []string
	// background is set for a call running as a task: a capability the
	// tool lacks is its own error result, not a -32021 to the client,
	// which may well have declared it, and questions end the run as a
	// taskInput.
	background bool
	// inputs are a background run's answers so far (tasks/update).
	inputs map[string]json.RawMessage
}

// run calls the tool of p as id (the call id a cancellation names). When
// cio.out is set, the tool's progress and log records go there, and in the
// legacy era its questions too (askClient): the tool then runs again with
// the answers, up to maxInputRounds times. In the modern era its questions
// end the call as an InputRequiredResult. Each run has the tool's deadline
// (TOOL_TIMEOUT_S or its TOOL_TIMEOUTS entry) plus the registry's reply
// margin: the registry answers a call past its deadline with a "timed out"
// result itself. A caller that goes away (legacy disconnect, modern stream
// close), or a registry that does not answer in time, cancels the call.
func (m *Server) run(ctx context.Context, q *request, p *callParams, id string, cio callIO) (any, *rpcError) {
	args, err := registry.Arguments(p.Name, p.Arguments)
	if err != nil {
		return m.argumentError(ctx, q, err)
	}
	req := &registry.CallRequest{Caller: q.caller(), Name: p.Name, Arguments: args, CallID: id, Meta: p.Meta,
		ClientCapabilities: cio.caps, LogLevel: cio.level}
	if cio.background {
		req.InputResponses = cio.inputs
	} else if q.modern {
		inputs, replay, e := m.modernInputs(q, p)
		if e != nil {
			return nil, e
		}
		req.InputResponses, req.Replay = inputs, replay
	}
	out, token := cio.out, cio.token
	if out != nil && (token != nil || req.LogLevel != "") {
		req.ProgressSubject = wire.NewStream()
		stop, err := m.relayProgress(req.ProgressSubject, func(ev registry.ProgressEvent) {
			switch {
			case ev.Log != nil:
				_ = out.send(logMessage(ev.Log))
			case token != nil:
				_ = out.send(rpcNotification{JSONRPC: "2.0", Method: "notifications/progress", Params: &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: ev.Progress, Total: ev.Total, Message: ev.Message}})
			}
		})
		if err != nil {
			m.Log.WarnContext(ctx, "progress subscription failed", "err", err)
			req.ProgressSubject = ""
		} else {
			defer stop()
		}
	}
	for round := 1; ; round++ {
		resp, err := m.runOnce(ctx, q, req)
		if err != nil {
			return m.argumentError(ctx, q, err)
		}
		switch {
		case resp.MissingCapability != "" && q.modern && !cio.background:
			return nil, missingCapability(resp.MissingCapability)
		case len(resp.InputRequests) == 0:
			return m.result(q, resp), nil
		case cio.background:
			return &taskInput{requests: resp.InputRequests, answers: req.InputResponses}, nil
		case q.modern:
			return m.inputRequired(q, p.Name, req.InputResponses, resp.InputRequests), nil
		case out == nil || round == maxInputRounds:
			return nil, newRPCError(http.StatusOK, jsonrpc.CodeInternalError, "%s asked the client more than this request allows", p.Name)
		}
		answers, err := m.askClient(ctx, q, out, resp.InputRequests)
		if err != nil {
			m.Log.InfoContext(ctx, "a tool's question went unanswered", "tool", p.Name, "err", err)
			return m.result(q, toolError(fmt.Sprintf("%s failed: %v", p.Name, err))), nil
		}
		if req.InputResponses == nil {
			req.InputResponses = map[string]json.RawMessage{}
		}
		for k, v := range answers {
			req.InputResponses[k] = v
		}
		req.Replay = slices.Sorted(maps.Keys(answers))
	}
}

// runOnce is one run of the call in the registry.
func (m *Server) runOnce(ctx context.Context, q *request, req *registry.CallRequest) (*registry.CallResponse, error) {
	callCtx, cancel := context.WithTimeout(ctx, registry.CallTimeout(m.ToolTimeout(req.Name)))
	defer cancel()
	resp, err := m.registry.Call(callCtx, req)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			m.cancel(context.WithoutCancel(ctx), q, req.CallID, "the client went away")
		case callCtx.Err() != nil || wire.IsCode(err, wire.DeadlineExceeded):
			// The registry did not answer in time: whatever runs the
			// call must stop it, not finish it for nobody.
			m.cancel(context.WithoutCancel(ctx), q, req.CallID, "timed out")
		}
		return nil, err
	}
	return resp, nil
}

// result is the tools/call result of a registry answer.
func (m *Server) result(q *request, resp *registry.CallResponse) callResult {
	out := callResult{Content: resp.Content, StructuredContent: resp.StructuredContent, IsError: resp.IsError}
	if out.Content == nil {
		out.Content = []json.RawMessage{}
	}
	if q.modern {
		out.ResultType = "complete"
	}
	return out
}

// toolError is a failed tool result with text.
func toolError(text string) *registry.CallResponse {
	b, _ := json.Marshal(&mcp.TextContent{Text: text})
	return &registry.CallResponse{Content: []json.RawMessage{b}, IsError: true}
}

// argumentError renders a failed call. From 2025-11-25 on (SEP-1303) an
// argument validation error is a tool result with isError, so that the
// model reads the message and corrects its call; older clients, and every
// other error (an unknown tool, a payload too large), keep the JSON-RPC
// error.
func (m *Server) argumentError(ctx context.Context, q *request, err error) (any, *rpcError) {
	var werr *wire.Error
	if !toolErrors(q) || !errors.As(err, &werr) || werr.Code != wire.InvalidArgument {
		return nil, m.registryError(ctx, err)
	}
	text, _ := json.Marshal(&mcp.TextContent{Text: werr.Message})
	out := callResult{Content: []json.RawMessage{text}, IsError: true}
	if q.modern {
		out.ResultType = "complete"
	}
	return out, nil
}

// toolErrors reports whether the request's protocol version has SEP-1303's
// validation errors as tool results: 2025-11-25 and the modern era.
func toolErrors(q *request) bool {
	return q.modern || q.version >= latestLegacy
}

// callID names a call so that a notifications/cancelled arriving on any
// replica finds it: the client's scope (its session, else account, else
// IP) plus its JSON-RPC request id. Only a session id that opened counts:
// it opens for the account it was sealed for alone, while a bare header
// value is tolerated on tools/call and anyone could copy it.
func callID(q *request, id json.RawMessage) string {
	scope := "sid:" + q.sessionID
	switch {
	case q.session != nil:
	case q.principal != nil:
		scope = "acct:" + q.principal.AccountID
	default:
		scope = "ip:" + authn.ClientIP(q.r)
	}
	var buf bytes.Buffer
	if json.Compact(&buf, id) != nil {
		buf.Reset()
		buf.Write(id)
	}
	sum := sha256.Sum256([]byte(scope + "\x00" + buf.String()))
	return hex.EncodeToString(sum[:16])
}

// cancel asks the registry replica running callID to stop it, on behalf of
// q's caller: the registry stops only a call of that same account.
func (m *Server) cancel(ctx context.Context, q *request, id, reason string) {
	ev := &registry.CancelEvent{CallID: id, AccountID: q.caller().AccountID, Reason: reason}
	if err := m.registry.Cancel(ctx, ev); err != nil {
		m.Log.WarnContext(ctx, "publishing a cancellation failed", "call_id", id, "err", err)
	}
}

// relayProgress passes the ProgressEvents published on subject to progress
// until stop is called. stop first relays every event that arrived before
// it: the registry publishes progress and replies on one connection, so
// NATS delivers its progress ahead of the reply, and a channel subscription
// keeps that order (a callback subscription would race the reply).
func (m *Server) relayProgress(subject string, progress func(registry.ProgressEvent)) (stop func(), err error) {
	ch := make(chan *nats.Msg, 256)
	sub, err := m.Conn.ChanSubscribe(subject, ch)
	if err != nil {
		return nil, fmt.Errorf("subscribing to progress: %w", err)
	}
	relay := func(nm *nats.Msg) {
		var ev registry.ProgressEvent
		if json.Unmarshal(nm.Data, &ev) == nil {
			progress(ev)
		}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case nm := <-ch:
				relay(nm)
			case <-quit:
				for {
					select {
					case nm := <-ch:
						relay(nm)
					default:
						return
					}
				}
			}
		}
	}()
	return func() {
		close(quit)
		<-done
		_ = sub.Unsubscribe()
	}, nil
}
