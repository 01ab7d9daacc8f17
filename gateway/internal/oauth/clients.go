package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mirobody/mirobody-go/gateway/internal/authn"
	"github.com/mirobody/mirobody-go/services/ssrf"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Limits of Client ID Metadata Document fetches.
const (
	metadataTimeout  = 5 * time.Second
	metadataMaxBytes = 64 << 10
	metadataCacheTTL = 5 * time.Minute
)

// oauthClient is a client as the authorization server sees it.
type oauthClient struct {
	ID           string
	Name         string
	RedirectURIs []string
	// Document is set for clients identified by a Client ID Metadata
	// Document: the name comes from a document the client's domain serves.
	Document bool
}

// errUnknownClient is a client_id that names no registered client and no
// usable metadata document.
var errUnknownClient = errors.New("unknown client")

// clientResolver finds clients: registered ones in vfs-svc, and Client ID
// Metadata Documents (draft-ietf-oauth-client-id-metadata-document) fetched
// from the https URL that is their client_id, under an SSRF guard.
type clientResolver struct {
	store        *accounts.OAuth
	http         *http.Client
	allowPrivate bool
	log          *slog.Logger
	now          func() time.Time

	mu    sync.Mutex
	cache map[string]cachedClient
}

type cachedClient struct {
	c       *oauthClient
	expires time.Time
}

// newClientResolver returns a resolver; allowPrivate lets documents live on
// private and loopback addresses, over plain http too (tests, local use).
func newClientResolver(store *accounts.OAuth, allowPrivate bool, log *slog.Logger) *clientResolver {
	// The guard checks the address actually dialed, after DNS, so a name
	// that resolves (or rebinds) to a private address is caught.
	guard := &ssrf.Guard{AllowPrivate: allowPrivate}
	dialer := &net.Dialer{Timeout: metadataTimeout, Control: func(network, address string, c syscall.RawConn) error {
		if err := guard.Control(network, address, c); err != nil {
			return fmt.Errorf("address is not public: %w", err)
		}
		return nil
	}}
	client := &http.Client{
		Timeout:   metadataTimeout,
		Transport: &http.Transport{DialContext: dialer.DialContext, TLSHandshakeTimeout: metadataTimeout, MaxIdleConns: 10},
		// A document must be served at its own URL.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &clientResolver{store: store, http: client, allowPrivate: allowPrivate, log: log, now: time.Now, cache: map[string]cachedClient{}}
}

// isDocumentID reports whether a client_id is a metadata document URL.
func isDocumentID(id string) bool {
	return strings.HasPrefix(id, "https://") || strings.HasPrefix(id, "http://")
}

// resolve returns the client named id.
func (r *clientResolver) resolve(ctx context.Context, id string) (*oauthClient, error) {
	if id == "" || len(id) > 2000 {
		return nil, errUnknownClient
	}
	if !isDocumentID(id) {
		c, err := r.store.GetClient(ctx, &accounts.OAuthClientGetRequest{ID: id})
		if wire.IsCode(err, wire.NotFound) {
			return nil, errUnknownClient
		}
		if err != nil {
			return nil, err
		}
		return &oauthClient{ID: c.ID, Name: c.Name, RedirectURIs: c.RedirectURIs}, nil
	}
	r.mu.Lock()
	cached, ok := r.cache[id]
	r.mu.Unlock()
	if ok && r.now().Before(cached.expires) {
		return cached.c, nil
	}
	c, err := r.fetch(ctx, id)
	if err != nil {
		r.log.InfoContext(ctx, "client metadata document refused", "client_id", id, "err", err)
		return nil, fmt.Errorf("%w: %v", errUnknownClient, err)
	}
	r.mu.Lock()
	if len(r.cache) >= 1000 {
		clear(r.cache)
	}
	r.cache[id] = cachedClient{c: c, expires: r.now().Add(metadataCacheTTL)}
	r.mu.Unlock()
	return c, nil
}

// clientDocument is the part of a metadata document (RFC 7591 names) the
// authorization server reads.
type clientDocument struct {
	ClientID                string   `json:"client_id"`
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
}

// fetch reads and checks the metadata document at id.
func (r *clientResolver) fetch(ctx context.Context, id string) (*oauthClient, error) {
	u, err := url.Parse(id)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" || u.Path == "" || u.Path == "/" {
		return nil, errors.New("the client_id is not a URL with a path")
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && r.allowPrivate) {
		return nil, errors.New("the client_id URL must be https")
	}
	ctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching the document: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching the document: HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, metadataMaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the document: %w", err)
	}
	if len(body) > metadataMaxBytes {
		return nil, fmt.Errorf("the document is larger than %d bytes", metadataMaxBytes)
	}
	var doc clientDocument
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("the document is not JSON: %w", err)
	}
	if doc.ClientID != id {
		return nil, errors.New("the document's client_id is not its URL")
	}
	if doc.TokenEndpointAuthMethod != "" && doc.TokenEndpointAuthMethod != "none" {
		return nil, fmt.Errorf("token_endpoint_auth_method %q is not supported (public clients only)", doc.TokenEndpointAuthMethod)
	}
	if err := validRedirectURIs(doc.RedirectURIs); err != nil {
		return nil, err
	}
	name := strings.TrimSpace(doc.ClientName)
	if name == "" || len(name) > 200 {
		name = u.Host
	}
	return &oauthClient{ID: id, Name: name, RedirectURIs: doc.RedirectURIs, Document: true}, nil
}

// nativeSchemes are private-use schemes of MCP clients in wide use that
// predate RFC 8252's reverse-DNS rule; each is a desktop app's own.
var nativeSchemes = []string{"cursor", "vscode", "vscode-insiders", "windsurf"}

// redirectScheme reports whether scheme may carry a redirect URI: https,
// http (loopback only, checked by the caller), a private-use scheme in
// reverse-DNS form (RFC 8252 §7.1: it contains a dot, such as
// com.example.app) or one of nativeSchemes. An allow-list, because
// browsers and operating systems keep adding schemes that run something
// (javascript:, ms-msdt:, search-ms:, …) and a deny-list is always a step
// behind.
func redirectScheme(scheme string) bool {
	scheme = strings.ToLower(scheme)
	return scheme == "https" || scheme == "http" || strings.Contains(scheme, ".") || slices.Contains(nativeSchemes, scheme)
}

// validRedirectURIs checks registered redirect URIs (OAuth 2.1 §2.3.1):
// https anywhere, http on loopback only (RFC 8252 §7.3), or a private-use
// scheme of a native app (§7.1, redirectScheme); no fragments.
func validRedirectURIs(uris []string) error {
	if len(uris) == 0 || len(uris) > 20 {
		return errors.New("a client needs 1 to 20 redirect_uris")
	}
	for _, s := range uris {
		u, err := url.Parse(s)
		switch {
		case err != nil || !u.IsAbs() || len(s) > 2000:
			return fmt.Errorf("redirect_uri %q is not an absolute URI", s)
		case u.Fragment != "" || strings.Contains(s, "#"):
			return fmt.Errorf("redirect_uri %q has a fragment", s)
		case !redirectScheme(u.Scheme):
			return fmt.Errorf("redirect_uri %q: the scheme must be https, http on loopback, or a native app's reverse-DNS scheme such as com.example.app", s)
		case u.Scheme == "https" && u.Host == "":
			return fmt.Errorf("redirect_uri %q has no host", s)
		case u.Scheme == "http" && !authn.LoopbackHost(u.Hostname()):
			return fmt.Errorf("redirect_uri %q: plain http is allowed for loopback only", s)
		}
	}
	return nil
}

// redirectAllowed reports whether got is one of the registered URIs: an
// exact match, except that a loopback http URI may use any port (RFC 8252
// §7.3, native apps listen on an ephemeral port). The scheme is checked
// again, for clients stored before the allow-list.
func redirectAllowed(registered []string, got string) bool {
	g, err := url.Parse(got)
	if err != nil || !redirectScheme(g.Scheme) {
		return false
	}
	if slices.Contains(registered, got) {
		return true
	}
	if g.Scheme != "http" || !authn.LoopbackHost(g.Hostname()) {
		return false
	}
	for _, r := range registered {
		u, err := url.Parse(r)
		if err == nil && u.Scheme == "http" && u.Hostname() == g.Hostname() && u.EscapedPath() == g.EscapedPath() &&
			u.RawQuery == g.RawQuery && g.Fragment == "" && g.User == nil {
			return true
		}
	}
	return false
}

// registration is an RFC 7591 client registration request and response.
type registration struct {
	ClientID                string   `json:"client_id,omitempty"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at,omitempty"`
	ClientName              string   `json:"client_name,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types,omitempty"`
	ResponseTypes           []string `json:"response_types,omitempty"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method,omitempty"`
	Scope                   string   `json:"scope,omitempty"`
}

// register answers POST /oauth/register (RFC 7591). Every client is
// public: a request for a secret-based method gets "none" back, and the
// scope is always "mcp", as §3.2.1 lets the server decide.
func (o *Server) register(c echo.Context) error {
	var req registration
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, metadataMaxBytes+1))
	if err != nil || len(body) > metadataMaxBytes || json.Unmarshal(body, &req) != nil {
		return oauthFail(c, http.StatusBadRequest, "invalid_client_metadata", "the body must be a JSON client metadata object of at most 64 KiB")
	}
	if err := validRedirectURIs(req.RedirectURIs); err != nil {
		return oauthFail(c, http.StatusBadRequest, "invalid_redirect_uri", err.Error())
	}
	for _, g := range req.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return oauthFail(c, http.StatusBadRequest, "invalid_client_metadata", fmt.Sprintf("grant type %q is not supported", g))
		}
	}
	for _, rt := range req.ResponseTypes {
		if rt != "code" {
			return oauthFail(c, http.StatusBadRequest, "invalid_client_metadata", fmt.Sprintf("response type %q is not supported", rt))
		}
	}
	name := strings.TrimSpace(req.ClientName)
	if len(name) > 200 {
		return oauthFail(c, http.StatusBadRequest, "invalid_client_metadata", "client_name is longer than 200 bytes")
	}
	cl, err := o.store.RegisterClient(c.Request().Context(), &accounts.OAuthClient{Name: name, RedirectURIs: req.RedirectURIs})
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusCreated, registration{
		ClientID: cl.ID, ClientIDIssuedAt: cl.Created.Unix(), ClientName: cl.Name, RedirectURIs: cl.RedirectURIs,
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		TokenEndpointAuthMethod: "none", Scope: "mcp",
	})
}

// parseScope splits a scope parameter; empty means "mcp", and a scope
// the server does not know is an error.
func parseScope(s string) ([]string, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return []string{"mcp"}, nil
	}
	for _, f := range fields {
		if _, ok := scopeDescriptions[f]; !ok {
			return nil, fmt.Errorf("scope %q is not supported", f)
		}
	}
	slices.Sort(fields)
	return slices.Compact(fields), nil
}
