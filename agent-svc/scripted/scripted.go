// Package scripted is a model provider test double: an HTTP server that
// speaks the real wire formats of OpenAI Chat Completions, OpenAI Responses
// and Anthropic Messages (JSON requests, SSE responses), answers each
// request with the step a script chooses, checks what it received, and
// injects faults (429 with Retry-After, 500, slow streams, connections
// dropped mid-stream). Clients reach it through an ordinary base_url, so the
// code under test is the production code path.
//
// A request that hands the provider an MCP server (a Responses mcp tool,
// Anthropic mcp_servers) is served as the real providers do: the server
// connects to that MCP server with the official MCP Go SDK client and the
// credentials it was given, lists the tools, runs the tool calls the script
// asks for, and streams the provider's MCP events and the final text.
package scripted

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
)

// Formats the server speaks.
const (
	FormatOpenAI    = "openai"
	FormatAnthropic = "anthropic"
	FormatResponses = "openai-responses"
)

// Call is one tool call a step emits.
type Call struct {
	// ID defaults to call_<step>_<n>.
	ID   string
	Name string
	// Args is the JSON arguments object.
	Args string
}

// Fault makes a step fail instead of answering.
type Fault struct {
	// Status is the HTTP status to answer (429, 500...).
	Status int
	// RetryAfter, when set, is sent as the Retry-After header (seconds).
	RetryAfter string
}

// Step is the answer to one request.
type Step struct {
	// Fault answers with an HTTP error instead of a stream.
	Fault *Fault
	// Reasoning and Text are streamed in a few deltas each.
	Reasoning string
	Text      string
	// Calls are the tool calls of the answer.
	Calls []Call
	// DropAfterText closes the connection after the text deltas, before
	// the answer is complete.
	DropAfterText bool
	// Delay is slept before each chunk (a slow stream).
	Delay time.Duration
	// Usage is reported at the end; zero means a small made-up count.
	InputTokens, OutputTokens int64
}

// Received is a request as the server understood it, in neutral form.
type Received struct {
	Format   string
	Model    string
	System   string
	Tools    []string
	Messages []llm.Message
	// Header holds the request headers (for auth checks).
	Header http.Header
	// Temperature, MaxTokens and MaxCompletionTokens are the request's
	// sampling settings as sent (max_tokens, max_completion_tokens; the
	// Responses API's max_output_tokens counts as MaxTokens); nil or 0
	// when absent.
	Temperature         *float64
	MaxTokens           int
	MaxCompletionTokens int
	// MCP is the MCP server the request hands to the provider; nil for a
	// request without one. Tools then lists that server's tools, and
	// Messages grows by each step's tool calls and results.
	MCP *MCPServer
	// Parts are the file parts of the user messages (images, PDFs).
	Parts []Part
}

// MCPServer is an MCP server named in a request.
type MCPServer struct {
	Label string
	URL   string
	// Authorization is the Authorization header the provider sends to it.
	Authorization string
	// Headers are the other headers the request asked for.
	Headers map[string]string
}

// LastUser returns the content of the last user message.
func (r *Received) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == llm.RoleUser {
			return r.Messages[i].Content
		}
	}
	return ""
}

// HasTool reports whether the request offered a tool.
func (r *Received) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t == name {
			return true
		}
	}
	return false
}

// ToolResults returns the trailing tool messages: the results of the
// previous step's tool calls.
func (r *Received) ToolResults() []llm.Message {
	i := len(r.Messages)
	for i > 0 && r.Messages[i-1].Role == llm.RoleTool {
		i--
	}
	return append([]llm.Message(nil), r.Messages[i:]...)
}

// StepsSinceUser counts assistant messages after the last user message, so
// a stateless Responder knows where a conversation is.
func (r *Received) StepsSinceUser() int {
	n := 0
	for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role != llm.RoleUser; i-- {
		if r.Messages[i].Role == llm.RoleAssistant {
			n++
		}
	}
	return n
}

// Responder chooses the step answering a request. A returned error fails
// the request with HTTP 400 and is recorded for Errors.
type Responder func(r *Received) (Step, error)

// Server is a running scripted provider.
type Server struct {
	srv     *httptest.Server
	respond Responder
	mu      sync.Mutex
	errs    []error
	recv    []*Received
	busy    time.Duration
}

// New starts a server on a free loopback port.
func New(respond Responder) *Server {
	s := &Server{respond: respond}
	s.srv = httptest.NewUnstartedServer(s.mux())
	s.start()
	return s
}

func (s *Server) mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handle(FormatOpenAI))
	mux.HandleFunc("POST /chat/completions", s.handle(FormatOpenAI))
	mux.HandleFunc("POST /v1/responses", s.handle(FormatResponses))
	mux.HandleFunc("POST /v1/messages", s.handle(FormatAnthropic))
	return mux
}

// Listen starts a server on addr (for `mirobody dev`), not only for tests.
func Listen(addr string, respond Responder) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for the scripted provider: %w", err)
	}
	s := &Server{respond: respond}
	s.srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: s.mux(), ReadHeaderTimeout: 10 * time.Second}}
	s.start()
	return s, nil
}

// start serves s.srv, timing each request from its first byte read to the
// end of its response (Busy).
func (s *Server) start() {
	s.srv.Listener = timedListener{Listener: s.srv.Listener, s: s}
	s.srv.Config.ConnState = func(c net.Conn, state http.ConnState) {
		if tc, ok := c.(*timedConn); ok && (state == http.StateIdle || state == http.StateClosed || state == http.StateHijacked) {
			now := time.Now()
			s.mu.Lock()
			if !tc.since.IsZero() {
				s.busy += now.Sub(tc.since)
				tc.since = time.Time{}
			}
			s.mu.Unlock()
		}
	}
	s.srv.Start()
}

// timedListener hands out timedConns.
type timedListener struct {
	net.Listener
	s *Server
}

func (l timedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &timedConn{Conn: c, s: l.s}, nil
}

// timedConn notes when a request starts arriving: the first bytes read
// while the connection is idle. The server's ConnState hook ends the
// interval once the response is written (StateIdle) or the connection is
// gone.
type timedConn struct {
	net.Conn
	s     *Server
	since time.Time // guarded by s.mu; zero while idle
}

func (c *timedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		now := time.Now()
		c.s.mu.Lock()
		if c.since.IsZero() {
			c.since = now
		}
		c.s.mu.Unlock()
	}
	return n, err
}

// OpenAIBaseURL is the base_url for an openai or openai-responses provider.
func (s *Server) OpenAIBaseURL() string { return s.srv.URL + "/v1" }

// AnthropicBaseURL is the base_url for an anthropic provider.
func (s *Server) AnthropicBaseURL() string { return s.srv.URL }

// Close stops the server.
func (s *Server) Close() { s.srv.CloseClientConnections(); s.srv.Close() }

// Errors returns the expectation failures recorded so far.
func (s *Server) Errors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.errs...)
}

// Busy returns the time the server spent on requests, from the first byte
// of each request read off the socket to the last byte of its response
// written (net/http's parsing, the handler and the response's final flush),
// so benchmarks can tell the test double's cost from the client's.
func (s *Server) Busy() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.busy
}

// Requests returns every request received so far.
func (s *Server) Requests() []*Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Received(nil), s.recv...)
}

func (s *Server) handle(format string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var rec *Received
		var err error
		switch format {
		case FormatOpenAI:
			rec, err = parseOpenAI(r)
		case FormatResponses:
			rec, err = parseResponses(r)
		default:
			rec, err = parseAnthropic(r)
		}
		if err != nil {
			s.fail(w, err)
			return
		}
		if rec.MCP != nil {
			s.runMCP(w, r, rec)
			return
		}
		step, ok := s.next(w, rec, rec)
		if !ok {
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		e := &emitter{w: w, r: r, delay: step.Delay}
		if format == FormatOpenAI {
			streamOpenAI(e, rec, step)
		} else {
			streamAnthropic(e, rec, step)
		}
	}
}

// next records seen as received and asks the script for the step that
// answers rec. It returns false when that answer is already written: the
// responder failed, or the step is a fault.
func (s *Server) next(w http.ResponseWriter, seen, rec *Received) (Step, bool) {
	s.mu.Lock()
	s.recv = append(s.recv, seen)
	s.mu.Unlock()
	step, err := s.respond(rec)
	if err != nil {
		s.fail(w, err)
		return Step{}, false
	}
	if step.Fault != nil {
		if step.Fault.RetryAfter != "" {
			w.Header().Set("Retry-After", step.Fault.RetryAfter)
		}
		writeJSONError(w, rec.Format, step.Fault.Status)
		return Step{}, false
	}
	return step, true
}

func (s *Server) fail(w http.ResponseWriter, err error) {
	s.mu.Lock()
	s.errs = append(s.errs, err)
	s.mu.Unlock()
	http.Error(w, err.Error(), http.StatusBadRequest)
}

func writeJSONError(w http.ResponseWriter, format string, status int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	msg := http.StatusText(status)
	if format == FormatAnthropic {
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": "api_error", "message": msg}})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "server_error"}})
}

// emitter writes SSE frames, honouring the step's delay, and aborts the
// connection on request.
type emitter struct {
	w     http.ResponseWriter
	r     *http.Request
	delay time.Duration
}

func (e *emitter) send(event string, v any) {
	if e.delay > 0 {
		t := time.NewTimer(e.delay)
		select {
		case <-t.C:
		case <-e.r.Context().Done():
			t.Stop()
			panic(http.ErrAbortHandler)
		}
	}
	var b strings.Builder
	if event != "" {
		b.WriteString("event: " + event + "\n")
	}
	data, _ := json.Marshal(v)
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	_, _ = e.w.Write([]byte(b.String()))
	e.w.(http.Flusher).Flush()
}

func (e *emitter) raw(s string) {
	_, _ = e.w.Write([]byte(s))
	e.w.(http.Flusher).Flush()
}

// drop ends the response abruptly: net/http closes the connection without
// the terminating chunk, as a crashed upstream would.
func (e *emitter) drop() { panic(http.ErrAbortHandler) }

// pieces splits s into up to three deltas, so that clients see streaming.
func pieces(s string) []string {
	if s == "" {
		return nil
	}
	r := []rune(s)
	n := (len(r) + 2) / 3
	var out []string
	for i := 0; i < len(r); i += n {
		out = append(out, string(r[i:min(i+n, len(r))]))
	}
	return out
}

func callID(c Call, step, i int) string {
	if c.ID != "" {
		return c.ID
	}
	return fmt.Sprintf("call_%d_%d", step, i)
}

func usageOf(step Step) (int64, int64) {
	in, out := step.InputTokens, step.OutputTokens
	if in == 0 {
		in = 100
	}
	if out == 0 {
		out = 10
	}
	return in, out
}

// Sequence answers requests with steps in order, one per request, and fails
// requests beyond the last step.
func Sequence(steps ...Step) Responder {
	var mu sync.Mutex
	next := 0
	return func(*Received) (Step, error) {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(steps) {
			return Step{}, fmt.Errorf("request %d beyond the script's %d steps", next+1, len(steps))
		}
		next++
		return steps[next-1], nil
	}
}
