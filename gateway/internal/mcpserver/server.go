// Package mcpserver is the gateway's /mcp transport: Streamable HTTP for
// both protocol eras on one URL, sealed legacy sessions, SSE streams and
// change notifications, and tool calls through registry-svc. It sits behind
// authn's middleware and renders its own JSON-RPC errors (design.md).
package mcpserver

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/nats-io/nats.go"

	"fmt"
	"github.com/mirobody/mirobody-go/gateway/internal/authn"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Protocol versions. The legacy era negotiates one of legacyVersions in
// initialize and keeps it in the session; the modern era names
// modernVersion on every request.
const (
	modernVersion  = "2026-07-28"
	defaultVersion = "2025-03-26"
	latestLegacy   = "2025-11-25"
)

// legacyVersions are the stateful revisions served, newest first.
var legacyVersions = []string{latestLegacy, "2025-06-18", defaultVersion, "2024-11-05"}

// supportedVersions is every revision served, newest first.
var supportedVersions = append([]string{modernVersion}, legacyVersions...)

// HTTP headers of the Streamable HTTP transport.
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerMethod          = "Mcp-Method"
	headerName            = "Mcp-Name"
)

// Options configures the /mcp handler.
type Options struct {
	// Bus reaches registry-svc; Conn carries progress subscriptions and
	// the change and session events.
	Bus  *wire.Client
	Conn *nats.Conn
	// SessionKeys (MCP_SESSION_KEYS, base64 of 32 bytes each) seal legacy
	// session ids; without them a key is derived from SecretKey, and
	// without that one is random per process (warned).
	SessionKeys []string
	SecretKey   string
	// SessionTTL bounds a legacy session's life.
	SessionTTL time.Duration
	// Limits are the rate limits and stream counts shared with /api.
	Limits *authn.Limits
	// ToolTimeout is how long a tool may run (conf.Config.ToolTimeout):
	// tools/call gives the registry that plus registry.ReplyMargin, so
	// that the registry's "timed out" result arrives first. Required.
	ToolTimeout func(name string) time.Duration
	// Codes maps a wire error to its code and JSON-RPC error code: the
	// gateway's one code table.
	Codes          func(error) (wire.Code, int)
	PublicURL      string
	AllowedOrigins []string
	MaxBodyBytes   int64
	KeepAlive      time.Duration
	Version        string
	// Log is the component logger. Required.
	Log *slog.Logger
	// TaskTTL is how long a task and its result are kept (MCP_TASK_TTL_S).
	TaskTTL time.Duration
}

// Server serves /mcp for both protocol eras. See design.md for why this
// is a thin layer of our own over the SDK's protocol types. It must be
// mounted behind authn's Middleware, which verifies the bearer token: the
// transport reads the verdict and renders it in JSON-RPC.
type Server struct {
	Options
	registry  *registry.Client
	files     *files.FS
	sealer    *sealer
	revoked   *authn.Revocations
	hub       *hub
	levels    *logLevels
	challenge string
	params    *paramIndex
	tasks     *taskRunner
	lists     *encodedLists
	trusted   *trustedLists
}

// New returns the /mcp handler, subscribed to the events it serves.
// Close ends its streams.
func New(opts Options) (*Server, error) {
	keys, random, err := sessionKeys(opts.SessionKeys, opts.SecretKey)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if random {
		opts.Log.Warn("neither MCP_SESSION_KEYS nor SECRET_KEY is set: MCP session ids are valid on this replica only, until it restarts")
	}
	seal, err := newSealer(keys, opts.SessionTTL)
	if err != nil {
		return nil, err
	}
	revoked := authn.NewRevocations()
	if _, err := opts.Conn.Subscribe(subjectSessionDeleted, func(msg *nats.Msg) {
		var ev sessionDeleted
		if json.Unmarshal(msg.Data, &ev) == nil && ev.Nonce != "" {
			revoked.Add(ev.Nonce, ev.Until)
		}
	}); err != nil {
		return nil, fmt.Errorf("subscribing to %s: %w", subjectSessionDeleted, err)
	}
	levels, err := newLogLevels(opts.Conn)
	if err != nil {
		return nil, err
	}
	h, err := newHub(opts.Conn)
	if err != nil {
		return nil, err
	}
	// The subscriptions must reach the server before /mcp serves, or an
	// event right after start-up would miss its streams.
	if err := opts.Conn.Flush(); err != nil {
		h.close()
		return nil, fmt.Errorf("flushing the event subscriptions: %w", err)
	}
	base := strings.TrimRight(opts.PublicURL, "/")
	return &Server{Options: opts, registry: registry.NewClient(opts.Bus), files: files.NewFS(opts.Bus), sealer: seal, revoked: revoked, hub: h, levels: levels,
		params: &paramIndex{now: time.Now}, lists: &encodedLists{}, trusted: &trustedLists{now: time.Now},
		tasks:     newTaskRunner(opts.Bus, opts.TaskTTL),
		challenge: `Bearer resource_metadata="` + base + `/.well-known/oauth-protected-resource/mcp", scope="mcp"`}, nil
}

// Close ends every open stream; long streams end first, or an HTTP
// shutdown would wait for them until its grace period runs out.
func (m *Server) Close() { m.hub.close() }

// Streams reports how many streams are open on this replica.
func (m *Server) Streams() int {
	m.hub.mu.Lock()
	defer m.hub.mu.Unlock()
	return len(m.hub.listeners)
}

// Reject renders a request that authn's Middleware refused (an invalid
// token past its IP's budget) as a JSON-RPC error, which MCP clients read
// whatever the status.
func (m *Server) Reject(w http.ResponseWriter, _ *http.Request, err error) {
	code, rpc := m.Codes(err)
	status, msg := http.StatusInternalServerError, "internal error"
	if code == wire.ResourceExhausted {
		status, msg = http.StatusTooManyRequests, "rate limit exceeded, retry later"
	}
	writeRPCError(w, nullID, newRPCError(status, int64(rpc), "%s", msg))
}

// request is everything known about one HTTP request to /mcp once its
// headers are checked.
type request struct {
	r         *http.Request
	modern    bool
	version   string
	principal *authn.Principal
	session   *session
	sessionID string
	// terminated is set when the session id was ended by DELETE: unlike an
	// unknown id, it is refused on every method.
	terminated bool
	// sse says the client accepts an event stream reply.
	sse bool
}

// caller is the registry's view of the request's identity. Its session id
// (what tools see as user_info.session_id, design.md "Identity") is the
// principal's: the chat session named by an agent's token. A plain client
// has none of its own, so it is the legacy MCP session, and only an id
// that opened: a bare header value is anyone's to copy. The modern era has
// no sessions, hence "".
func (q *request) caller() registry.Caller {
	c := registry.Caller{}
	if q.principal != nil {
		c.AccountID = q.principal.AccountID
		c.Agent = q.principal.Agent
		c.SessionID = q.principal.SessionID
	}
	if c.SessionID == "" && q.session != nil {
		c.SessionID = q.sessionID
	}
	return c
}

// ServeHTTP implements http.Handler.
func (m *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !m.originAllowed(r) {
		writeRPCError(w, nullID, newRPCError(http.StatusForbidden, jsonrpc.CodeInvalidRequest, "forbidden: origin %q is not allowed", r.Header.Get("Origin")))
		return
	}
	if r.Header.Get("Origin") != "" {
		m.cors(w, r)
	}
	switch r.Method {
	case http.MethodOptions:
		w.WriteHeader(http.StatusNoContent)
	case http.MethodPost:
		m.post(w, r)
	case http.MethodGet:
		m.get(w, r)
	case http.MethodDelete:
		m.delete(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE, OPTIONS")
		writeRPCError(w, nullID, newRPCError(http.StatusMethodNotAllowed, jsonrpc.CodeInvalidRequest, "method %s is not allowed on /mcp", r.Method))
	}
}

// originAllowed implements DNS rebinding protection: a browser Origin must
// be listed in ALLOWED_ORIGINS or be the gateway's own public origin. No
// Origin (every non-browser client) is allowed.
func (m *Server) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	if slices.Contains(m.AllowedOrigins, "*") || slices.Contains(m.AllowedOrigins, origin) {
		return true
	}
	if u, err := url.Parse(m.PublicURL); err == nil && origin == u.Scheme+"://"+u.Host {
		return true
	}
	// A page served by this very loopback address (the dev UI, the
	// Inspector on localhost) is same-origin. Same-origin alone is not
	// enough: under DNS rebinding Host and Origin both name the attacker's
	// domain, which is why only loopback literals qualify.
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host && authn.LoopbackHost(u.Hostname())
}

// cors lets browser clients of an allowed origin call /mcp and read the
// headers MCP needs (the session id and the auth challenge).
func (m *Server) cors(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", r.Header.Get("Origin"))
	h.Add("Vary", "Origin")
	// ETag for tools/list revalidation; traceparent and X-Request-Id name
	// the request in a report.
	h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, WWW-Authenticate, Retry-After, ETag, traceparent, X-Request-Id")
	if r.Method == http.MethodOptions {
		h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
		// Mcp-Param-* names depend on the tool, so the requested list is
		// echoed rather than enumerated.
		if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
			h.Set("Access-Control-Allow-Headers", req)
		}
		h.Set("Access-Control-Max-Age", "600")
	}
}

// authenticate reads the verdict authn's Middleware left on the request.
// A presented token that is invalid is a 401 whatever the method (a client
// holding a dead token must learn so); a token without the mcp scope is a
// 403; no token is an anonymous caller.
func (m *Server) authenticate(r *http.Request) (*authn.Principal, *rpcError) {
	p, err := authn.FromContext(r.Context())
	if err != nil {
		if wire.IsCode(err, wire.Unauthenticated) {
			return nil, m.unauthorized("invalid token")
		}
		m.Log.ErrorContext(r.Context(), "token verification failed", "err", err)
		return nil, newRPCError(http.StatusServiceUnavailable, jsonrpc.CodeInternalError, "token verification is unavailable")
	}
	if p == nil {
		return nil, nil
	}
	if !p.HasScope("mcp") {
		e := newRPCError(http.StatusForbidden, jsonrpc.CodeInvalidRequest, "insufficient_scope: the token lacks scope mcp")
		e.Header = map[string]string{"WWW-Authenticate": strings.Replace(m.challenge, "Bearer ", `Bearer error="insufficient_scope", `, 1)}
		return nil, e
	}
	return p, nil
}

// unauthorized is the 401 of gateway/design.md "Auth on /mcp" with its challenge.
func (m *Server) unauthorized(msg string) *rpcError {
	e := newRPCError(http.StatusUnauthorized, jsonrpc.CodeInvalidRequest, "unauthorized: %s", msg)
	e.Header = map[string]string{"WWW-Authenticate": m.challenge}
	return e
}

// admit applies the rate limit for the request's account or client IP.
func (m *Server) admit(r *http.Request, p *authn.Principal) *rpcError {
	if wait, ok := m.Limits.Admit(r, p); !ok {
		e := newRPCError(http.StatusTooManyRequests, jsonrpc.CodeInternalError, "rate limit exceeded, retry later")
		e.Header = map[string]string{"Retry-After": authn.RetryAfter(wait)}
		return e
	}
	return nil
}

// readBody reads at most MaxBodyBytes.
func (m *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *rpcError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, m.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, newRPCError(http.StatusRequestEntityTooLarge, jsonrpc.CodeInvalidRequest, "request body exceeds %d bytes", mbe.Limit)
		}
		return nil, newRPCError(http.StatusBadRequest, jsonrpc.CodeParseError, "reading the body failed")
	}
	return body, nil
}

// acceptsSSE reports whether the Accept header allows an event stream.
func acceptsSSE(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		if strings.Contains(v, "text/event-stream") || strings.Contains(v, "*/*") {
			return true
		}
	}
	return false
}

// headerRequestID is the response header in which the gateway puts the
// request's trace id before /mcp runs.
const headerRequestID = "X-Request-Id"

// writeRPCError writes a single JSON-RPC error response. An error without
// data of its own gets {"requestId": <trace id>}, to quote when reporting it.
func writeRPCError(w http.ResponseWriter, id json.RawMessage, e *rpcError) {
	for k, v := range e.Header {
		w.Header().Set(k, v)
	}
	status := e.Status
	if status == 0 {
		status = http.StatusOK
	}
	rerr := e.Err
	if rid := w.Header().Get(headerRequestID); rid != "" && len(rerr.Data) == 0 {
		withID := *rerr
		withID.Data, _ = json.Marshal(map[string]string{"requestId": rid})
		rerr = &withID
	}
	writeJSON(w, status, rpcResponse{JSONRPC: "2.0", ID: id, Error: rerr})
}

// writeJSON writes v as an application/json body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
