package gateway

import (
	"context"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Principal is an authenticated caller.
type Principal struct {
	AccountID string
	KeyID     string
	Scopes    []string
	// Agent is the visibility profile named by an agent's token ("" for
	// plain clients, SPEC §8).
	Agent string
}

const principalKey = "mirobody.principal"

// bearer returns the token of an `Authorization: Bearer` header, or "".
func bearer(h string) string {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// verdict is the outcome of verifying one bearer token, kept in the
// request context by limitInvalidTokens.
type verdict struct {
	token string
	p     *Principal
	err   error
}

type verdictKey struct{}

// withVerdict returns ctx carrying v.
func withVerdict(ctx context.Context, v *verdict) context.Context {
	return context.WithValue(ctx, verdictKey{}, v)
}

// authenticate resolves a bearer token to a principal: a Mirobody API key
// or an access token of our authorization server. Session cookies of the
// login page never reach here. A token already verified for this request
// (limitInvalidTokens) is not verified again.
func (s *Service) authenticate(ctx context.Context, token string) (*Principal, error) {
	if v, ok := ctx.Value(verdictKey{}).(*verdict); ok && v.token == token {
		return v.p, v.err
	}
	if strings.Count(token, ".") == 2 && !strings.HasPrefix(token, accounts.KeyPrefix) {
		return s.tokens.verify(ctx, token)
	}
	if !strings.HasPrefix(token, accounts.KeyPrefix) {
		return nil, wire.Errorf(wire.Unauthenticated, "invalid token")
	}
	hash := accounts.HashKey(token)
	if p, ok := s.keys.get(hash); ok {
		return p, nil
	}
	r, err := s.accounts.VerifyKey(ctx, &accounts.KeyVerifyRequest{Hash: hash})
	if err != nil {
		return nil, err
	}
	p := &Principal{AccountID: r.AccountID, KeyID: r.KeyID, Scopes: r.Scopes}
	s.keys.put(hash, p)
	return p, nil
}

// requireAuth rejects requests without a valid token holding scope.
func (s *Service) requireAuth(scope string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			token := bearer(c.Request().Header.Get(echo.HeaderAuthorization))
			if token == "" {
				return wire.Errorf(wire.Unauthenticated, "missing bearer token")
			}
			p, err := s.authenticate(c.Request().Context(), token)
			if err != nil {
				return err
			}
			if !slices.Contains(p.Scopes, scope) {
				return wire.Errorf(wire.PermissionDenied, "token lacks scope %q", scope)
			}
			c.Set(principalKey, p)
			return next(c)
		}
	}
}

func principal(c echo.Context) *Principal {
	p, _ := c.Get(principalKey).(*Principal)
	return p
}
