package registrysvc

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/vfs/mcpservers"
	"github.com/mirobody/mirobody-go/services/wire"
)

// probeTimeout bounds the first connection made when a server is added,
// which gives the answer its health.
const probeTimeout = 5 * time.Second

// serverHandlers serve registry.servers.*: validation and the SSRF check
// here, storage in vfs-svc, health from this replica's sessions.
type serverHandlers struct{ x *external }

func (h *serverHandlers) register(svc *wire.Service) error {
	return errors.Join(
		wire.Serve(svc, registry.ServersAdd, h.add),
		wire.Serve(svc, registry.ServersList, h.list),
		wire.Serve(svc, registry.ServersUpdate, h.update),
		wire.Serve(svc, registry.ServersRemove, h.remove),
		wire.Serve(svc, registry.ServersOAuthCallback, h.oauthCallback),
		wire.Serve(svc, registry.ServersOAuthStart, h.oauthStart),
	)
}

func (h *serverHandlers) add(ctx context.Context, req *registry.ServerAddRequest) (*registry.Server, error) {
	if req.AccountID == "" {
		return nil, wire.Errorf(wire.Unauthenticated, "adding an MCP server needs an account")
	}
	if !registry.ServerNamePattern.MatchString(req.Name) {
		return nil, wire.Errorf(wire.InvalidArgument, "server name %q must match [a-z0-9_-]{1,32}", req.Name)
	}
	u, err := h.x.guard.CheckURL(ctx, req.URL)
	if err != nil {
		return nil, wire.Errorf(wire.InvalidArgument, "%s", err.Error())
	}
	if err := checkHeaders(req.Headers); err != nil {
		return nil, wire.Errorf(wire.InvalidArgument, "%s", err.Error())
	}
	if strings.ContainsAny(req.AccessToken, "\r\n\x00 ") || len(req.AccessToken) > 8192 {
		return nil, wire.Errorf(wire.InvalidArgument, "access_token must be one token of at most 8192 characters")
	}
	auth := registry.AuthNone
	switch {
	case len(req.Headers) > 0:
		auth = registry.AuthHeaders
	case req.AccessToken != "":
		auth = registry.AuthBearer
	}
	enabled := req.Enabled == nil || *req.Enabled
	m := mcpservers.MCPServer{AccountID: req.AccountID, Name: req.Name, URL: u.String(), Auth: auth, Enabled: enabled}
	if auth != registry.AuthNone {
		m.Secrets = &mcpservers.MCPServerSecrets{AccessToken: req.AccessToken, Headers: req.Headers}
	}
	var authorizeURL string
	switch req.Auth {
	case "", registry.AuthBearer, registry.AuthHeaders, registry.AuthNone:
	case registry.AuthOAuth:
		if auth != registry.AuthNone {
			return nil, wire.Errorf(wire.InvalidArgument, "auth oauth takes no access_token or headers")
		}
		if r, err := url.Parse(req.RedirectURI); err != nil || (r.Scheme != "http" && r.Scheme != "https") || r.Host == "" {
			return nil, wire.Errorf(wire.InvalidArgument, "auth oauth needs Mirobody's callback URL (is MCP_PUBLIC_URL set?)")
		}
		o, au, err := h.x.startOAuth(ctx, u, req.RedirectURI)
		if err == nil && req.Link {
			au, err = startLink(o, req.AccountID, req.Name)
		}
		if err != nil {
			return nil, wire.Errorf(wire.InvalidArgument, "starting OAuth with %s: %s", u.Redacted(), err.Error())
		}
		m.Auth, m.Secrets, authorizeURL = registry.AuthOAuth, &mcpservers.MCPServerSecrets{OAuth: o}, au
	default:
		return nil, wire.Errorf(wire.InvalidArgument, "auth must be none, bearer, headers or oauth")
	}
	stored, err := h.x.store.Create(ctx, &mcpservers.MCPServerCreateRequest{Server: m})
	if err != nil {
		return nil, err
	}
	h.x.announce(req.AccountID)
	if enabled {
		// Connect now, so that the answer says whether the server works.
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		h.x.toolsFor(pctx, req.AccountID, nil)
		cancel()
	}
	srv := h.server(stored)
	srv.AuthorizeURL = authorizeURL
	return srv, nil
}

func (h *serverHandlers) list(ctx context.Context, req *registry.ServerListRequest) (*registry.ServerListResponse, error) {
	resp, err := h.x.store.List(ctx, &mcpservers.MCPServerListRequest{AccountID: req.AccountID})
	if err != nil {
		return nil, err
	}
	// Listing the tools is the health check of servers not seen yet; a
	// slow one stays unknown rather than holding the answer.
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	h.x.toolsFor(pctx, req.AccountID, nil)
	cancel()
	out := &registry.ServerListResponse{Servers: make([]registry.Server, 0, len(resp.Servers))}
	for i := range resp.Servers {
		out.Servers = append(out.Servers, *h.server(&resp.Servers[i]))
	}
	return out, nil
}

func (h *serverHandlers) update(ctx context.Context, req *registry.ServerUpdateRequest) (*registry.Server, error) {
	m, err := h.x.store.Update(ctx, &mcpservers.MCPServerUpdateRequest{AccountID: req.AccountID, Name: req.Name, Enabled: req.Enabled})
	if err != nil {
		return nil, err
	}
	h.x.announce(req.AccountID)
	h.x.config(ctx, req.AccountID) // closes the session of a server switched off or removed
	return h.server(m), nil
}

func (h *serverHandlers) remove(ctx context.Context, req *registry.ServerRemoveRequest) (*registry.Server, error) {
	m, err := h.x.store.Delete(ctx, &mcpservers.MCPServerDeleteRequest{AccountID: req.AccountID, Name: req.Name})
	if err != nil {
		return nil, err
	}
	h.x.announce(req.AccountID)
	h.x.config(ctx, req.AccountID) // closes the session of a server switched off or removed
	return h.server(m), nil
}

// server is the public view of m: never its secrets.
func (h *serverHandlers) server(m *mcpservers.MCPServer) *registry.Server {
	s := &registry.Server{Name: m.Name, URL: m.URL, Enabled: m.Enabled, Auth: m.Auth, Health: registry.Health{Status: registry.HealthUnknown}}
	if s.Auth == "" {
		s.Auth = registry.AuthNone
	}
	if m.Enabled {
		s.Health = h.x.health(m.AccountID, m.Name)
	}
	return s
}
