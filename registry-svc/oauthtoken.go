package registrysvc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"

	"github.com/mirobody/mirobody-go/services/vfs/mcpservers"
)

// expiryLeeway refreshes a token this long before it expires, so that a
// request does not race the expiry.
const expiryLeeway = 30 * time.Second

// oauthSpec is a server with auth oauth: spec's fingerprint covers the
// stored tokens, so a new authorization (or another replica's refresh,
// once the configuration is read again) opens a new session.
func oauthSpec(name, url string, o *mcpservers.MCPServerOAuth) serverSpec {
	spec := newSpec(name, url, "", nil)
	sum := sha256.New()
	fmt.Fprintf(sum, "%s\x00%s\x00%s\x00%s", spec.fingerprint, o.ClientID, o.AccessToken, o.RefreshToken)
	spec.fingerprint = hex.EncodeToString(sum.Sum(nil))[:16]
	copied := *o
	spec.oauth = &copied
	return spec
}

// oauthTransport sends a server's OAuth access token. A token about to
// expire, or one the server answers 401 to, is refreshed once with the
// refresh token (golang.org/x/oauth2), and the rotated tokens are sealed
// in vfs-svc again. When there is no token or the refresh fails, requests
// fail with errAuthNeeded and the health says so.
type oauthTransport struct {
	x             *external
	account, name string
	base          http.RoundTripper

	mu sync.Mutex
	o  mcpservers.MCPServerOAuth
	// spent is a refresh token the authorization server refused: it is
	// not sent again (the health loop would otherwise retry it forever).
	spent    string
	needAuth atomic.Bool
}

func newOAuthTransport(x *external, account string, spec serverSpec, base http.RoundTripper) *oauthTransport {
	return &oauthTransport{x: x, account: account, name: spec.name, base: base, o: *spec.oauth}
}

// RoundTrip implements http.RoundTripper.
func (t *oauthTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := t.token(r.Context(), "")
	if err != nil {
		return nil, err
	}
	resp, err := t.send(r, tok)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || (r.Body != nil && r.GetBody == nil) {
		return resp, err
	}
	fresh, err := t.token(r.Context(), tok)
	if err != nil {
		resp.Body.Close()
		return nil, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	retry := r.Clone(r.Context())
	if r.GetBody != nil {
		if retry.Body, err = r.GetBody(); err != nil {
			return nil, fmt.Errorf("replaying a request after a token refresh: %w", err)
		}
	}
	return t.send(retry, fresh)
}

func (t *oauthTransport) send(r *http.Request, token string) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	return t.base.RoundTrip(r)
}

// token returns the access token to send: the current one, unless it is
// stale (refused by the server) or about to expire, in which case it is
// refreshed. Refreshes are serialised per session; another replica's
// refresh is adopted from the store before spending the refresh token
// (a rotated refresh token is good for one use only).
func (t *oauthTransport) token(ctx context.Context, stale string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	usable := func(o *mcpservers.MCPServerOAuth) bool {
		return o.AccessToken != "" && o.AccessToken != stale && (o.Expiry.IsZero() || time.Until(o.Expiry) > expiryLeeway)
	}
	if usable(&t.o) {
		return t.o.AccessToken, nil
	}
	if stored := t.stored(ctx); stored != nil && stored.ClientID == t.o.ClientID {
		if stored.AccessToken != t.o.AccessToken && usable(stored) {
			t.o = *stored
			return t.o.AccessToken, nil
		}
		if stored.RefreshToken != "" {
			t.o.RefreshToken = stored.RefreshToken
		}
	}
	if t.o.RefreshToken == "" || t.o.RefreshToken == t.spent {
		t.needAuth.Store(true)
		return "", errAuthNeeded
	}
	hctx := context.WithValue(ctx, oauth2.HTTPClient, t.x.oauthClient())
	tok, err := oauthConfig(&t.o).TokenSource(hctx, &oauth2.Token{RefreshToken: t.o.RefreshToken}).Token()
	if err != nil {
		t.x.log.WarnContext(ctx, "refreshing an external MCP server's OAuth token failed", "account", t.account, "server", t.name, "err", err)
		if _, refused := errors.AsType[*oauth2.RetrieveError](err); refused {
			t.spent = t.o.RefreshToken // a network error may pass; a refusal does not
		}
		t.needAuth.Store(true)
		return "", errAuthNeeded
	}
	t.o.AccessToken, t.o.RefreshToken, t.o.Expiry = tok.AccessToken, tok.RefreshToken, tok.Expiry
	t.needAuth.Store(false)
	o := t.o
	if _, err := t.x.store.SetSecrets(ctx, &mcpservers.MCPServerSetSecretsRequest{AccountID: t.account, Name: t.name,
		Secrets: &mcpservers.MCPServerSecrets{OAuth: &o}}); err != nil {
		// The session goes on with the new token; after a restart the
		// user may have to authorize again.
		t.x.log.WarnContext(ctx, "storing a refreshed OAuth token failed", "account", t.account, "server", t.name, "err", err)
	}
	t.x.log.InfoContext(ctx, "refreshed an external MCP server's OAuth token", "account", t.account, "server", t.name)
	return t.o.AccessToken, nil
}

// stored reads the server's OAuth state from vfs-svc, or nil.
func (t *oauthTransport) stored(ctx context.Context) *mcpservers.MCPServerOAuth {
	resp, err := t.x.store.List(ctx, &mcpservers.MCPServerListRequest{AccountID: t.account, WithSecrets: true})
	if err != nil {
		return nil
	}
	for _, m := range resp.Servers {
		if m.Name == t.name && m.Secrets != nil && m.Secrets.OAuth != nil {
			return m.Secrets.OAuth
		}
	}
	return nil
}
