// Package authn verifies the bearer token of a gateway request once and
// carries the caller's identity and client IP (behind TRUSTED_PROXIES) in
// the request context; it also holds the rate limits that /mcp and /api
// share, and the cap on connections per IP. It renders nothing itself: each
// surface (the MCP transport, the REST API) turns the verdict into its own
// error shape. The model is the official go-sdk, whose auth is a middleware
// outside the transport (auth.RequireBearerToken, auth.TokenInfoFromContext).
package authn

import (
	"context"
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Principal is an authenticated caller.
type Principal struct {
	AccountID string
	KeyID     string
	Scopes    []string
	// Agent is the visibility profile named by an agent's token
	// (agent.AgentNone for plain clients).
	Agent agent.Name
	// SessionID is the chat session of an agent's per-turn token (its sid
	// claim); "" for API keys and OAuth access tokens. See design.md
	// ("Identity") for what tools see as user_info.session_id.
	SessionID string
	// WebEmail is the account's email when the caller is the web app
	// signed in with a session cookie (CSRF is its token); "" for bearer
	// tokens.
	WebEmail, CSRF string
}

// HasScope reports whether p holds scope.
func (p *Principal) HasScope(scope string) bool { return slices.Contains(p.Scopes, scope) }

// TokenVerifier resolves an access token of our authorization server (a
// JWT) to its principal. Every way a token can be wrong is Unauthenticated.
type TokenVerifier interface {
	Verify(ctx context.Context, token string) (*Principal, error)
}

// SessionVerifier resolves the web app's session cookie to its principal
// and the CSRF token its state-changing requests must repeat.
type SessionVerifier interface {
	VerifySession(ctx context.Context, value string) (*Principal, string, error)
}

// KeyVerifier checks an API key's hash with the account store (vfs-svc).
type KeyVerifier interface {
	VerifyKey(ctx context.Context, req *accounts.KeyVerifyRequest) (*accounts.KeyVerifyResponse, error)
}

// Options configures an Authenticator.
type Options struct {
	// Keys verifies API keys; verified keys are cached for keyCacheTTL.
	Keys KeyVerifier
	// Tokens verifies our access tokens.
	Tokens TokenVerifier
	// Sessions verifies the web app's session cookie (named SessionCookie)
	// on requests under SessionPath without a bearer token; nil accepts
	// no cookie. The cookie never authenticates anything else, /mcp
	// included.
	Sessions      SessionVerifier
	SessionCookie string
	SessionPath   string
	// Limits counts invalid tokens against the client IP's budget.
	Limits *Limits
	// Proxies resolves the client IP behind trusted reverse proxies; nil
	// trusts none, so the client IP is the peer's.
	Proxies *Proxies
	// Metrics receives gateway_auth_verifications_total; nil means none.
	Metrics prometheus.Registerer
}

// Authenticator verifies bearer tokens: Mirobody API keys and access
// tokens of the gateway's authorization server, and the web app's session
// cookie on /api. The login pages' session cookies never reach it.
type Authenticator struct {
	opts     Options
	keys     *keyCache
	verified *prometheus.CounterVec
}

// New returns an Authenticator for opts.
func New(opts Options) (*Authenticator, error) {
	a := &Authenticator{opts: opts, keys: newKeyCache(), verified: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_auth_verifications_total",
		Help: "Bearer tokens and web session cookies verified, by kind (key, jwt, cookie, other) and result (ok, invalid, error); one per request that presents a token.",
	}, []string{"kind", "result"})}
	if opts.Metrics != nil {
		if err := opts.Metrics.Register(a.verified); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// ForgetKeys drops every cached API key, after a revocation
// (events.keys.revoked).
func (a *Authenticator) ForgetKeys() { a.keys.reset() }

// Bearer returns the token of an `Authorization: Bearer` header, or "".
func Bearer(h string) string {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// verify resolves token to a principal.
func (a *Authenticator) verify(ctx context.Context, token string) (p *Principal, err error) {
	kind := "other"
	defer func() { a.countVerification(kind, err) }()
	if strings.Count(token, ".") == 2 && !strings.HasPrefix(token, accounts.KeyPrefix) {
		kind = "jwt"
		return a.opts.Tokens.Verify(ctx, token)
	}
	if !strings.HasPrefix(token, accounts.KeyPrefix) {
		return nil, wire.Errorf(wire.Unauthenticated, "invalid token")
	}
	kind = "key"
	hash := accounts.HashKey(token)
	if p, ok := a.keys.get(hash); ok {
		return p, nil
	}
	r, err := a.opts.Keys.VerifyKey(ctx, &accounts.KeyVerifyRequest{Hash: hash})
	if err != nil {
		return nil, err
	}
	p = &Principal{AccountID: r.AccountID, KeyID: r.KeyID, Scopes: r.Scopes}
	a.keys.put(hash, p)
	return p, nil
}

// verdict is the outcome of verifying a request's bearer token.
type verdict struct {
	p   *Principal
	err error
}

type verdictKey struct{}

// FromContext returns the caller of the request ctx belongs to: its
// principal, or why the token it presented was refused. A request without
// a bearer token (or one that did not pass through Middleware) is nil,
// nil: anonymous.
func FromContext(ctx context.Context) (*Principal, error) {
	v, _ := ctx.Value(verdictKey{}).(*verdict)
	if v == nil {
		return nil, nil
	}
	return v.p, v.err
}

// Require returns the principal of ctx if it holds scope: a request
// without a token is Unauthenticated, one with a refused token gets the
// refusal, one without the scope PermissionDenied.
func Require(ctx context.Context, scope string) (*Principal, error) {
	v, _ := ctx.Value(verdictKey{}).(*verdict)
	switch {
	case v == nil:
		return nil, wire.Errorf(wire.Unauthenticated, "missing bearer token")
	case v.err != nil:
		return nil, v.err
	case !v.p.HasScope(scope):
		return nil, wire.Errorf(wire.PermissionDenied, "token lacks scope %q", scope)
	}
	return v.p, nil
}

// Reject renders a request refused by Middleware (a wire error; a rate
// limit carries the Retry-After header already).
type Reject func(w http.ResponseWriter, r *http.Request, err error)

// Middleware resolves the client IP of every request it wraps (ClientIP)
// and verifies its bearer token, once, putting the verdict in the request
// context (FromContext). It refuses nothing but guessing: a presented
// token that does not verify counts against the client IP's budget
// whatever the route, and past the budget
// reject renders a resource_exhausted error with Retry-After. Everything
// else (anonymous access, scopes, the 401 challenge) is the route's
// decision, so that each surface answers in its own protocol.
func (a *Authenticator) Middleware(next http.Handler, reject Reject) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = withClientIP(r, a.opts.Proxies)
		token := Bearer(r.Header.Get("Authorization"))
		var (
			p   *Principal
			err error
		)
		switch ck := a.sessionCookie(r); {
		case token != "":
			p, err = a.verify(r.Context(), token)
		case ck != "":
			p, err = a.verifySession(r, ck)
		default:
			next.ServeHTTP(w, r)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), verdictKey{}, &verdict{p: p, err: err}))
		if wire.IsCode(err, wire.Unauthenticated) {
			if wait, ok := a.opts.Limits.AllowInvalidToken(ClientIP(r)); !ok {
				w.Header().Set("Retry-After", RetryAfter(wait))
				reject(w, r, wire.Errorf(wire.ResourceExhausted, "rate limit exceeded, retry later"))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// CSRFHeader carries the web session's CSRF token on state-changing
// requests made with its cookie.
const CSRFHeader = "X-CSRF-Token"

// sessionCookie returns the web session cookie of r, if r may use one.
func (a *Authenticator) sessionCookie(r *http.Request) string {
	if a.opts.Sessions == nil || !strings.HasPrefix(r.URL.Path, a.opts.SessionPath+"/") {
		return ""
	}
	ck, err := r.Cookie(a.opts.SessionCookie)
	if err != nil {
		return ""
	}
	return ck.Value
}

// verifySession resolves a web session cookie. A request that can change
// state must repeat the session's CSRF token in CSRFHeader (design.md
// "Web app sign-in"): the cookie alone is what a forged request carries.
func (a *Authenticator) verifySession(r *http.Request, value string) (p *Principal, err error) {
	defer func() { a.countVerification("cookie", err) }()
	p, csrf, err := a.opts.Sessions.VerifySession(r.Context(), value)
	if err != nil {
		return nil, err
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if subtle.ConstantTimeCompare([]byte(r.Header.Get(CSRFHeader)), []byte(csrf)) != 1 {
			return nil, wire.Errorf(wire.PermissionDenied, "missing or wrong %s header", CSRFHeader)
		}
	}
	p.CSRF = csrf
	return p, nil
}

// countVerification counts one verification of a credential of kind by
// its outcome: ok, invalid (unauthenticated) or error.
func (a *Authenticator) countVerification(kind string, err error) {
	result := "ok"
	switch {
	case wire.IsCode(err, wire.Unauthenticated):
		result = "invalid"
	case err != nil:
		result = "error"
	}
	a.verified.WithLabelValues(kind, result).Inc()
}
