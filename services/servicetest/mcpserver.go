package servicetest

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPServerOptions configures a test MCP server.
type MCPServerOptions struct {
	// Versions restricts the protocol versions it speaks (nil: every
	// version the SDK knows), to test both eras.
	Versions []string
	// Stateless serves without sessions, which the modern era
	// (2026-07-28) needs in the SDK.
	Stateless bool
	// Token, when set, is the only bearer token accepted; other requests
	// get 401.
	Token string
	// Headers must all be present with these values; other requests get 401.
	Headers map[string]string
}

// MCPServer is a real MCP server (the official Go SDK over httptest), for
// tests of Mirobody as an MCP client. Add tools to Server with mcp.AddTool.
type MCPServer struct {
	URL    string
	Server *mcp.Server
	srv    *httptest.Server
	down   atomic.Bool

	mu       sync.Mutex
	auth     []string
	versions []string
}

// NewMCPServer starts a test MCP server, stopped at cleanup.
func NewMCPServer(t testing.TB, opts MCPServerOptions) *MCPServer {
	t.Helper()
	s := &MCPServer{Server: mcp.NewServer(&mcp.Implementation{Name: "test-mcp", Version: "1"},
		&mcp.ServerOptions{SupportedProtocolVersions: opts.Versions})}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.Server }, &mcp.StreamableHTTPOptions{Stateless: opts.Stateless})
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		s.mu.Lock()
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
			s.versions = append(s.versions, v)
		}
		s.mu.Unlock()
		if opts.Token != "" && r.Header.Get("Authorization") != "Bearer "+opts.Token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		for k, v := range opts.Headers {
			if r.Header.Get(k) != v {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	s.URL = s.srv.URL
	t.Cleanup(func() {
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
	return s
}

// Authorizations returns the Authorization header of every request so far.
func (s *MCPServer) Authorizations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}

// Versions returns the MCP-Protocol-Version header of every request that had one.
func (s *MCPServer) Versions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.versions...)
}

// SetDown makes the server fail every request (and drops open streams),
// or serve again.
func (s *MCPServer) SetDown(down bool) {
	s.down.Store(down)
	if down {
		s.srv.CloseClientConnections()
	}
}
