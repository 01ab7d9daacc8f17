package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/registry"
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

// mcpOptions configures the /mcp handler.
type mcpOptions struct {
	Registry *registry.Client
	// Conn carries progress subscriptions.
	Conn *nats.Conn
	// Auth resolves a bearer token; nil, nil never happens.
	Auth           func(r *http.Request, token string) (*Principal, error)
	Sealer         *sealer
	Revoked        *revocations
	Hub            *hub
	Limits         *limits
	PublicURL      string
	AllowedOrigins []string
	MaxBodyBytes   int64
	KeepAlive      time.Duration
	Version        string
	Log            *slog.Logger
}

// mcpServer serves /mcp for both protocol eras. See design.md for why this
// is a thin layer of our own over the SDK's protocol types.
type mcpServer struct {
	mcpOptions
	challenge string
	params    *paramIndex
}

// newMCPServer returns the /mcp handler.
func newMCPServer(opts mcpOptions) *mcpServer {
	base := strings.TrimRight(opts.PublicURL, "/")
	return &mcpServer{mcpOptions: opts, params: &paramIndex{now: time.Now},
		challenge: `Bearer resource_metadata="` + base + `/.well-known/oauth-protected-resource/mcp", scope="mcp"`}
}

// request is everything known about one HTTP request to /mcp once its
// headers are checked.
type request struct {
	r         *http.Request
	modern    bool
	version   string
	principal *Principal
	session   *session
	sessionID string
	// terminated is set when the session id was ended by DELETE: unlike an
	// unknown id, it is refused on every method.
	terminated bool
	// sse says the client accepts an event stream reply.
	sse bool
}

// caller is the registry's view of the request's identity.
func (q *request) caller() registry.Caller {
	c := registry.Caller{}
	if q.session != nil {
		// Only a session id that opened reaches tools (user_info.session_id).
		c.SessionID = q.sessionID
	}
	if q.principal != nil {
		c.AccountID = q.principal.AccountID
		c.Agent = q.principal.Agent
	}
	return c
}

// ServeHTTP implements http.Handler.
func (m *mcpServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
func (m *mcpServer) originAllowed(r *http.Request) bool {
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
	return err == nil && u.Host == r.Host && isLoopbackHost(u.Hostname())
}

// cors lets browser clients of an allowed origin call /mcp and read the
// headers MCP needs (the session id and the auth challenge).
func (m *mcpServer) cors(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", r.Header.Get("Origin"))
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, WWW-Authenticate, Retry-After")
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

// isLoopbackHost reports whether host is localhost or a loopback IP.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// authenticate resolves the bearer token, if any. A presented token that is
// invalid is a 401 whatever the method (a client holding a dead token must
// learn so); a token without the mcp scope is a 403.
func (m *mcpServer) authenticate(r *http.Request) (*Principal, *rpcError) {
	token := bearer(r.Header.Get("Authorization"))
	if token == "" {
		return nil, nil
	}
	p, err := m.Auth(r, token)
	if err != nil {
		if wire.IsCode(err, wire.Unauthenticated) {
			return nil, m.unauthorized("invalid token")
		}
		m.Log.ErrorContext(r.Context(), "token verification failed", "err", err)
		return nil, newRPCError(http.StatusServiceUnavailable, jsonrpc.CodeInternalError, "token verification is unavailable")
	}
	if !slices.Contains(p.Scopes, "mcp") {
		e := newRPCError(http.StatusForbidden, jsonrpc.CodeInvalidRequest, "insufficient_scope: the token lacks scope mcp")
		e.Header = map[string]string{"WWW-Authenticate": strings.Replace(m.challenge, "Bearer ", `Bearer error="insufficient_scope", `, 1)}
		return nil, e
	}
	return p, nil
}

// unauthorized is the 401 of SPEC §5.4 with its challenge.
func (m *mcpServer) unauthorized(msg string) *rpcError {
	e := newRPCError(http.StatusUnauthorized, jsonrpc.CodeInvalidRequest, "unauthorized: %s", msg)
	e.Header = map[string]string{"WWW-Authenticate": m.challenge}
	return e
}

// admit applies the rate limit for the request's account or client IP.
func (m *mcpServer) admit(r *http.Request, p *Principal) *rpcError {
	var wait time.Duration
	var ok bool
	if p != nil {
		wait, ok = m.Limits.allow("acct:"+p.AccountID, true)
	} else {
		wait, ok = m.Limits.allowAnonymous(clientIP(r))
	}
	if !ok {
		e := newRPCError(http.StatusTooManyRequests, jsonrpc.CodeInternalError, "rate limit exceeded, retry later")
		e.Header = map[string]string{"Retry-After": retryAfter(wait)}
		return e
	}
	return nil
}

// readBody reads at most MaxBodyBytes.
func (m *mcpServer) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *rpcError) {
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

// writeRPCError writes a single JSON-RPC error response.
func writeRPCError(w http.ResponseWriter, id json.RawMessage, e *rpcError) {
	for k, v := range e.Header {
		w.Header().Set(k, v)
	}
	status := e.Status
	if status == 0 {
		status = http.StatusOK
	}
	writeJSON(w, status, rpcResponse{JSONRPC: "2.0", ID: id, Error: e.Err})
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
