package registrysvc

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/vfs/mcpservers"
	"github.com/mirobody/mirobody-go/services/wire"
)

// pendingTTL is how long a user has to finish an authorization.
const pendingTTL = 10 * time.Minute

// errAuthNeeded is the health error of an OAuth server without a usable
// token: the user has to authorize again.
var errAuthNeeded = errors.New("authorization needed")

// probeBody is an initialize request: a server protected by OAuth answers
// it with 401 and the location of its protected resource metadata.
const probeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"mirobody","version":"1"}}}`

// oauthClient is the HTTP client of every OAuth request (discovery,
// registration, token): the same SSRF guard as the MCP sessions, no
// redirects. The SDK's discovery helpers use it as is because its
// transport dials itself.
func (x *external) oauthClient() *http.Client {
	return &http.Client{Transport: x.transport, CheckRedirect: noRedirects, Timeout: 15 * time.Second}
}

// startOAuth discovers the server's authorization server (MCP
// authorization: 401 → RFC 9728 resource metadata → RFC 8414 server
// metadata), registers Mirobody as a client (RFC 7591) and returns the
// client state with a pending PKCE flow and the URL the user opens.
// The SDK's oauthex has the metadata types, fetchers and registration;
// its client handler does not fit (it blocks in Connect waiting for a
// browser and keeps the tokens in memory), so the flow is driven here.
func (x *external) startOAuth(ctx context.Context, server *url.URL, redirectURI string) (*mcpservers.MCPServerOAuth, string, error) {
	hc := x.oauthClient()
	resource := server.String()
	prm, err := x.resourceMetadata(ctx, hc, resource)
	if err != nil {
		return nil, "", err
	}
	if len(prm.AuthorizationServers) == 0 {
		return nil, "", fmt.Errorf("the server's resource metadata names no authorization server")
	}
	issuer := prm.AuthorizationServers[0]
	asm, err := x.authServerMetadata(ctx, hc, issuer)
	if err != nil {
		return nil, "", err
	}
	if asm.RegistrationEndpoint == "" {
		return nil, "", fmt.Errorf("the authorization server %s does not offer dynamic client registration", issuer)
	}
	reg, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{redirectURI}, ClientName: "Mirobody", TokenEndpointAuthMethod: "none",
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
	}, hc)
	if err != nil {
		return nil, "", fmt.Errorf("registering with the authorization server: %w", err)
	}
	o := &mcpservers.MCPServerOAuth{ClientID: reg.ClientID, ClientSecret: reg.ClientSecret, AuthURL: asm.AuthorizationEndpoint,
		TokenURL: asm.TokenEndpoint, RedirectURI: redirectURI, Resource: prm.Resource, Scopes: prm.ScopesSupported}
	o.State = rand.Text()
	o.Verifier = oauth2.GenerateVerifier()
	o.PendingUntil = time.Now().Add(pendingTTL)
	return o, authCodeURL(o), nil
}

// authCodeURL is the authorization server's page for o's pending flow.
// The state is opaque (random): the account and server stay with us, in
// the browser's sealed flow cookie (gateway) and in vfs-svc.
func authCodeURL(o *mcpservers.MCPServerOAuth) string {
	return oauthConfig(o).AuthCodeURL(o.State, oauth2.S256ChallengeOption(o.Verifier), oauth2.SetAuthURLParam("resource", o.Resource))
}

// startLink makes o's flow start at the gateway (registry.OAuthStartPath),
// which binds the browser that opens it first; the link's secret is kept
// with the flow.
func startLink(o *mcpservers.MCPServerOAuth, account, name string) (string, error) {
	base, ok := strings.CutSuffix(o.RedirectURI, registry.OAuthCallbackPath)
	if !ok {
		return "", fmt.Errorf("the redirect URI %s is not the gateway's callback", o.RedirectURI)
	}
	o.Link = rand.Text()
	return base + registry.OAuthStartPath + "?" + url.Values{"account": {account}, "server": {name}, "link": {o.Link}}.Encode(), nil
}

// validFlow reports whether account and name can name a flow at all, so
// that junk is refused without a lookup.
func validFlow(account, name string) bool {
	_, err := uuid.Parse(account)
	return err == nil && registry.ServerNamePattern.MatchString(name)
}

// oauthStart spends a start link: the flow's link secret is cleared, and
// the gateway gets the state to bind the browser to and the page to send
// it to.
func (h *serverHandlers) oauthStart(ctx context.Context, req *registry.ServerOAuthStartRequest) (*registry.ServerOAuthStartResponse, error) {
	refused := wire.Errorf(wire.FailedPrecondition, "this link is unknown, expired or already used; start again")
	if req.Link == "" || !validFlow(req.AccountID, req.Name) {
		return nil, refused
	}
	resp, err := h.x.store.List(ctx, &mcpservers.MCPServerListRequest{AccountID: req.AccountID, WithSecrets: true})
	if err != nil {
		return nil, err
	}
	for _, m := range resp.Servers {
		if m.Name != req.Name || m.Secrets == nil || m.Secrets.OAuth == nil {
			continue
		}
		o := *m.Secrets.OAuth
		if o.Link == "" || subtle.ConstantTimeCompare([]byte(o.Link), []byte(req.Link)) != 1 || o.State == "" || time.Now().After(o.PendingUntil) {
			return nil, refused
		}
		o.Link = ""
		sec := *m.Secrets
		sec.OAuth = &o
		if _, err := h.x.store.SetSecrets(ctx, &mcpservers.MCPServerSetSecretsRequest{AccountID: req.AccountID, Name: req.Name, Secrets: &sec}); err != nil {
			return nil, err
		}
		return &registry.ServerOAuthStartResponse{State: o.State, AuthorizeURL: authCodeURL(&o)}, nil
	}
	return nil, refused
}

func oauthConfig(o *mcpservers.MCPServerOAuth) *oauth2.Config {
	return &oauth2.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, RedirectURL: o.RedirectURI, Scopes: o.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: o.AuthURL, TokenURL: o.TokenURL, AuthStyle: oauth2.AuthStyleInParams}}
}

// resourceMetadata finds the server's RFC 9728 metadata: where its 401
// challenge says, else at the well-known location for its path.
func (x *external) resourceMetadata(ctx context.Context, hc *http.Client, resource string) (*oauthex.ProtectedResourceMetadata, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, resource, bytes.NewReader([]byte(probeBody)))
	if err != nil {
		return nil, fmt.Errorf("probing the server: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("probing the server: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	metaURL := ""
	if resp.StatusCode == http.StatusUnauthorized {
		challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
		for _, c := range challenges {
			if c.Scheme == "bearer" && c.Params["resource_metadata"] != "" {
				metaURL = c.Params["resource_metadata"]
			}
		}
	}
	if metaURL == "" {
		u, _ := url.Parse(resource)
		metaURL = u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + strings.TrimRight(u.Path, "/")
	}
	if _, err := x.guard.CheckURL(ctx, metaURL); err != nil {
		return nil, fmt.Errorf("resource metadata: %w", err)
	}
	prm, err := oauthex.GetProtectedResourceMetadata(ctx, metaURL, resource, hc)
	if err != nil {
		return nil, fmt.Errorf("reading the server's OAuth metadata: %w", err)
	}
	return prm, nil
}

// authServerMetadata reads RFC 8414 metadata, then OpenID discovery.
func (x *external) authServerMetadata(ctx context.Context, hc *http.Client, issuer string) (*oauthex.AuthServerMeta, error) {
	u, err := x.guard.CheckURL(ctx, issuer)
	if err != nil {
		return nil, fmt.Errorf("authorization server: %w", err)
	}
	origin, path := u.Scheme+"://"+u.Host, strings.TrimRight(u.Path, "/")
	for _, m := range []string{origin + "/.well-known/oauth-authorization-server" + path, origin + "/.well-known/openid-configuration" + path} {
		asm, err := oauthex.GetAuthServerMeta(ctx, m, issuer, hc)
		if err != nil {
			return nil, fmt.Errorf("reading the authorization server's metadata: %w", err)
		}
		if asm != nil {
			return asm, nil
		}
	}
	return nil, fmt.Errorf("the authorization server %s publishes no metadata", issuer)
}

// oauthCallback finishes a flow: the state is claimed once in vfs-svc,
// the code exchanged (PKCE verifier, RFC 8707 resource), the tokens sealed.
func (h *serverHandlers) oauthCallback(ctx context.Context, req *registry.ServerOAuthCallbackRequest) (*registry.Server, error) {
	account, name := req.AccountID, req.Name
	if req.State == "" || !validFlow(account, name) {
		return nil, wire.Errorf(wire.FailedPrecondition, "this authorization is unknown, expired or already used; start again")
	}
	m, err := h.x.store.ClaimOAuth(ctx, &mcpservers.MCPServerClaimOAuthRequest{AccountID: account, Name: name, State: req.State})
	if err != nil {
		return nil, err
	}
	if req.Error != "" || req.Code == "" {
		return nil, wire.Errorf(wire.PermissionDenied, "the authorization server did not grant access (%s)", cmp.Or(req.Error, "no code"))
	}
	o := m.Secrets.OAuth
	tok, err := oauthConfig(o).Exchange(context.WithValue(ctx, oauth2.HTTPClient, h.x.oauthClient()), req.Code,
		oauth2.VerifierOption(o.Verifier), oauth2.SetAuthURLParam("resource", o.Resource))
	if err != nil {
		h.x.log.WarnContext(ctx, "OAuth code exchange failed", "account", account, "server", name, "err", err)
		return nil, wire.Errorf(wire.PermissionDenied, "the authorization server refused the code exchange")
	}
	sec := *m.Secrets
	stored := *o
	stored.State, stored.Verifier, stored.PendingUntil, stored.Link = "", "", time.Time{}, ""
	stored.AccessToken, stored.RefreshToken, stored.Expiry = tok.AccessToken, tok.RefreshToken, tok.Expiry
	sec.OAuth = &stored
	if _, err := h.x.store.SetSecrets(ctx, &mcpservers.MCPServerSetSecretsRequest{AccountID: account, Name: name, Secrets: &sec}); err != nil {
		return nil, err
	}
	h.x.announce(account)
	h.x.config(ctx, account) // the session without a token is replaced
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	h.x.toolsFor(pctx, account, nil)
	cancel()
	m.Secrets = nil
	return h.server(m), nil
}
