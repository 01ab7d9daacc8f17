package oauth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mirobody/mirobody-go/gateway/internal/authn"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Access token lifetimes (gateway/design.md "Tokens").
const (
	accessTokenTTL   = time.Hour
	agentTokenMaxTTL = 10 * time.Minute
	// agentClientID is the client_id claim of tokens minted for agents.
	agentClientID = "mirobody-agent"
	// clockSkew is the leeway on iat and exp between replicas' clocks.
	clockSkew = 30 * time.Second
)

// AccessClaims are the claims of an RFC 9068 JWT access token.
type AccessClaims struct {
	jwt.RegisteredClaims
	Scope    string `json:"scope"`
	ClientID string `json:"client_id"`
	// Agent and SessionID are set on tokens minted for an agent's turn;
	// Agent selects that agent's visibility profile (registry-svc/design.md "Tool visibility").
	Agent     agent.Name `json:"agent,omitempty"`
	SessionID string     `json:"sid,omitempty"`
	// Grant is the refresh family the token came from, so that revoking
	// the access token revokes its grant too.
	Grant string `json:"gid,omitempty"`
}

// Tokens mints and verifies the gateway's access tokens.
type Tokens struct {
	keys *signingKeys
	// issuer is the iss claim (the public base URL); resource is the aud
	// of tokens for /mcp.
	issuer, resource string
	// revoked is this replica's copy of the revoked tokens and grants.
	revoked *revocations
	now     func() time.Time
}

// newTokens returns the issuer for the gateway's public URL.
func newTokens(keys *signingKeys, revoked *revocations, publicURL string) *Tokens {
	base := strings.TrimRight(publicURL, "/")
	return &Tokens{keys: keys, issuer: base, resource: base + "/mcp", revoked: revoked, now: time.Now}
}

// Mint signs c, filling iss, iat, exp and jti.
func (ti *Tokens) Mint(ctx context.Context, c AccessClaims, ttl time.Duration) (string, error) {
	key, err := ti.keys.signer(ctx)
	if err != nil {
		return "", err
	}
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", fmt.Errorf("generating a token id: %w", err)
	}
	now := ti.now()
	c.Issuer = ti.issuer
	c.IssuedAt = jwt.NewNumericDate(now)
	c.ExpiresAt = jwt.NewNumericDate(now.Add(ttl))
	c.ID = base64.RawURLEncoding.EncodeToString(jti)
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
	t.Header["typ"] = "at+jwt"
	t.Header["kid"] = key.kid
	s, err := t.SignedString(key.key)
	if err != nil {
		return "", fmt.Errorf("signing an access token: %w", err)
	}
	return s, nil
}

// parse verifies token for audience and returns its claims. Every way a
// token can be wrong (signature, expiry, audience, type) is the same
// unauthenticated error (gateway/design.md "Auth on /mcp").
func (ti *Tokens) parse(ctx context.Context, token, audience string) (*AccessClaims, error) {
	var c AccessClaims
	var keyErr error
	_, err := jwt.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		if typ, _ := t.Header["typ"].(string); !strings.EqualFold(typ, "at+jwt") && !strings.EqualFold(typ, "application/at+jwt") {
			return nil, errors.New("not an access token")
		}
		kid, _ := t.Header["kid"].(string)
		pub, err := ti.keys.publicKey(ctx, kid)
		if err != nil && !errors.Is(err, errUnknownKey) {
			keyErr = err
		}
		return pub, err
	}, jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}), jwt.WithIssuer(ti.issuer), jwt.WithAudience(audience),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(clockSkew), jwt.WithTimeFunc(ti.now))
	if keyErr != nil {
		// The store is down: not the client's fault, so not a 401.
		return nil, wire.Errorf(wire.Unavailable, "token keys are unavailable")
	}
	if err != nil || c.Subject == "" {
		return nil, wire.Errorf(wire.Unauthenticated, "invalid token")
	}
	refused, err := ti.revoked.refused(ctx, c.ID, c.Grant)
	if err != nil {
		return nil, err
	}
	if refused {
		return nil, wire.Errorf(wire.Unauthenticated, "invalid token")
	}
	return &c, nil
}

// Revoke refuses token on every replica until it expires, durably; a
// token that is already invalid needs nothing. The gateway revokes a Base
// turn's token when the turn ends.
func (ti *Tokens) Revoke(ctx context.Context, token string) error {
	c, err := ti.parse(ctx, token, ti.resource)
	if wire.IsCode(err, wire.Unauthenticated) {
		return nil
	}
	if err != nil {
		return err
	}
	return ti.revoked.add(ctx, accounts.Revocation{Kind: accounts.RevokedToken, ID: c.ID, Until: c.ExpiresAt.Add(clockSkew)})
}

// Verify resolves an access token for /mcp to its principal; it
// implements authn.TokenVerifier. The sid claim of an agent's token
// becomes the principal's SessionID (design.md "Identity").
func (ti *Tokens) Verify(ctx context.Context, token string) (*authn.Principal, error) {
	c, err := ti.parse(ctx, token, ti.resource)
	if err != nil {
		return nil, err
	}
	p := &authn.Principal{AccountID: c.Subject, Scopes: strings.Fields(c.Scope), SessionID: c.SessionID}
	if c.Agent != agent.AgentNone {
		if !c.Agent.Valid() {
			return nil, wire.Errorf(wire.Unauthenticated, "invalid token")
		}
		p.Agent = c.Agent
	}
	return p, nil
}

// AgentTokenRequest asks for a token an agent's provider uses to reach
// /mcp on behalf of one chat turn (gateway/design.md "Tokens").
type AgentTokenRequest struct {
	AccountID, SessionID string
	Agent                agent.Name
	// TTL is capped at agentTokenMaxTTL; 0 means the cap.
	TTL time.Duration
}

// MintAgent returns a short-lived JWT for /mcp whose agent claim selects that
// agent's tool visibility (registry-svc/design.md "Tool visibility") and whose
// sid claim names the chat session, so that the agent's tools see it as
// user_info.session_id.
func (ti *Tokens) MintAgent(ctx context.Context, req *AgentTokenRequest) (string, error) {
	if !req.Agent.Valid() {
		return "", fmt.Errorf("minting an agent token: unknown agent %q", req.Agent)
	}
	if req.AccountID == "" {
		return "", errors.New("minting an agent token: no account")
	}
	ttl := req.TTL
	if ttl <= 0 || ttl > agentTokenMaxTTL {
		ttl = agentTokenMaxTTL
	}
	return ti.Mint(ctx, AccessClaims{
		RegisteredClaims: jwt.RegisteredClaims{Subject: req.AccountID, Audience: jwt.ClaimStrings{ti.resource}},
		Scope:            "mcp", ClientID: agentClientID, Agent: req.Agent, SessionID: req.SessionID,
	}, ttl)
}
