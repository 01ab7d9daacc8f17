package vfssvc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// The OAuth state of gateway/design.md "OAuth authorization server". The
// gateway runs the protocol; these handlers keep codes single-use and refresh
// families consistent under concurrent replicas, which only the database can
// do.

func (s *Service) registerOAuth(svc *wire.Service) error {
	return errors.Join(
		wire.Serve(svc, accounts.OAuthKeysRotate, s.rotateSigningKeys),
		wire.Serve(svc, accounts.OAuthKeysList, s.listSigningKeys),
		wire.Serve(svc, accounts.OAuthClientsRegister, s.registerOAuthClient),
		wire.Serve(svc, accounts.OAuthClientsGet, s.getOAuthClient),
		wire.Serve(svc, accounts.OAuthCodesCreate, s.createOAuthCode),
		wire.Serve(svc, accounts.OAuthCodesConsume, s.consumeOAuthCode),
		wire.Serve(svc, accounts.OAuthRefreshCreate, s.createOAuthRefresh),
		wire.Serve(svc, accounts.OAuthRefreshRotate, s.rotateOAuthRefresh),
		wire.Serve(svc, accounts.OAuthRefreshRevoke, s.revokeOAuthRefresh),
	)
}

func (s *Service) rotateSigningKeys(ctx context.Context, req *accounts.SigningKeyRotateRequest) (*accounts.SigningKeyListResponse, error) {
	c := req.Candidate
	if c.ID == "" || len(c.ID) > 100 || c.Alg == "" || len(c.Public) == 0 || len(c.SealedPrivate) == 0 {
		return nil, wire.Errorf(wire.InvalidArgument, "a candidate key needs an id, an alg, a public key and a sealed private key")
	}
	if req.MaxAgeS <= 0 || req.DropAfterS <= req.MaxAgeS {
		return nil, wire.Errorf(wire.InvalidArgument, "max_age_s must be positive and drop_after_s larger")
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("rotating signing keys: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// One rotation at a time, so replicas racing at start-up agree on one key.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('oauth_signing_keys'))`); err != nil {
		return nil, fmt.Errorf("locking signing keys: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM oauth_signing_keys WHERE created < now() - make_interval(secs => $1)`, req.DropAfterS); err != nil {
		return nil, fmt.Errorf("dropping old signing keys: %w", err)
	}
	var fresh bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM oauth_signing_keys WHERE created > now() - make_interval(secs => $1))`,
		req.MaxAgeS).Scan(&fresh); err != nil {
		return nil, fmt.Errorf("reading signing keys: %w", err)
	}
	if !fresh || req.Force {
		if _, err := tx.Exec(ctx, `INSERT INTO oauth_signing_keys (id, alg, public, sealed_private) VALUES ($1, $2, $3, $4)`,
			c.ID, c.Alg, c.Public, c.SealedPrivate); err != nil {
			return nil, fmt.Errorf("storing a signing key: %w", err)
		}
	}
	keys, err := signingKeys(ctx, tx)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("rotating signing keys: %w", err)
	}
	return &accounts.SigningKeyListResponse{Keys: keys}, nil
}

func (s *Service) listSigningKeys(ctx context.Context, _ *accounts.SigningKeyListRequest) (*accounts.SigningKeyListResponse, error) {
	keys, err := signingKeys(ctx, s.pool)
	if err != nil {
		return nil, err
	}
	return &accounts.SigningKeyListResponse{Keys: keys}, nil
}

func signingKeys(ctx context.Context, q querier) ([]accounts.SigningKey, error) {
	rows, err := q.Query(ctx, `SELECT id, alg, public, sealed_private, created FROM oauth_signing_keys ORDER BY created DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("listing signing keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (accounts.SigningKey, error) {
		var k accounts.SigningKey
		err := r.Scan(&k.ID, &k.Alg, &k.Public, &k.SealedPrivate, &k.Created)
		return k, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing signing keys: %w", err)
	}
	return keys, nil
}

func (s *Service) registerOAuthClient(ctx context.Context, req *accounts.OAuthClient) (*accounts.OAuthClient, error) {
	name := strings.TrimSpace(req.Name)
	if len(name) > 200 {
		return nil, wire.Errorf(wire.InvalidArgument, "client_name is longer than 200 bytes")
	}
	if len(req.RedirectURIs) == 0 || len(req.RedirectURIs) > 20 {
		return nil, wire.Errorf(wire.InvalidArgument, "a client needs 1 to 20 redirect_uris")
	}
	for _, u := range req.RedirectURIs {
		if u == "" || len(u) > 2000 {
			return nil, wire.Errorf(wire.InvalidArgument, "a redirect_uri must have 1 to 2000 bytes")
		}
	}
	c := accounts.OAuthClient{ID: uuid.NewString(), Name: name, RedirectURIs: req.RedirectURIs}
	if err := s.pool.QueryRow(ctx, `INSERT INTO oauth_clients (id, name, redirect_uris) VALUES ($1, $2, $3) RETURNING created`,
		c.ID, c.Name, c.RedirectURIs).Scan(&c.Created); err != nil {
		return nil, fmt.Errorf("registering a client: %w", err)
	}
	return &c, nil
}

func (s *Service) getOAuthClient(ctx context.Context, req *accounts.OAuthClientGetRequest) (*accounts.OAuthClient, error) {
	c := accounts.OAuthClient{ID: req.ID}
	err := s.pool.QueryRow(ctx, `SELECT name, redirect_uris, created FROM oauth_clients WHERE id = $1`, req.ID).
		Scan(&c.Name, &c.RedirectURIs, &c.Created)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, wire.Errorf(wire.NotFound, "no such client")
	}
	if err != nil {
		return nil, fmt.Errorf("reading a client: %w", err)
	}
	return &c, nil
}

func (s *Service) createOAuthCode(ctx context.Context, req *accounts.OAuthCode) (*wire.Empty, error) {
	if len(req.Hash) != 64 || req.ClientID == "" || req.RedirectURI == "" || req.Challenge == "" || req.Resource == "" {
		return nil, wire.Errorf(wire.InvalidArgument, "a code needs a hash, a client, a redirect_uri, a challenge and a resource")
	}
	if _, err := uuid.Parse(req.AccountID); err != nil {
		return nil, wire.Errorf(wire.InvalidArgument, "account id %q is not a UUID", req.AccountID)
	}
	if !req.Expires.After(time.Now()) {
		return nil, wire.Errorf(wire.InvalidArgument, "the code is already expired")
	}
	// Spent and expired codes are kept a day, so that a late replay still
	// revokes what the code issued; then they go.
	if _, err := s.pool.Exec(ctx, `DELETE FROM oauth_codes WHERE expires < now() - interval '1 day'`); err != nil {
		return nil, fmt.Errorf("dropping old codes: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO oauth_codes (hash, client_id, account_id, redirect_uri, scope, resource, challenge, family, expires)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		req.Hash, req.ClientID, req.AccountID, req.RedirectURI, req.Scope, req.Resource, req.Challenge, uuid.NewString(), req.Expires); err != nil {
		return nil, fmt.Errorf("storing a code: %w", err)
	}
	return &wire.Empty{}, nil
}

func (s *Service) consumeOAuthCode(ctx context.Context, req *accounts.OAuthCodeConsumeRequest) (*accounts.OAuthCode, error) {
	c := accounts.OAuthCode{Hash: req.Hash}
	err := s.pool.QueryRow(ctx, `UPDATE oauth_codes SET used = now()
		WHERE hash = $1 AND used IS NULL AND expires > now()
		RETURNING client_id, account_id, redirect_uri, scope, resource, challenge, family, expires`, req.Hash).
		Scan(&c.ClientID, &c.AccountID, &c.RedirectURI, &c.Scope, &c.Resource, &c.Challenge, &c.Family, &c.Expires)
	if err == nil {
		return &c, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("using a code: %w", err)
	}
	// A replayed code may have been stolen: what it issued is revoked
	// (OAuth 2.1 §4.1.3), the access tokens too.
	invalid := wire.Errorf(wire.Unauthenticated, "the authorization code is invalid, expired or already used")
	var family string
	err = s.pool.QueryRow(ctx, `SELECT family FROM oauth_codes WHERE hash = $1 AND used IS NOT NULL`, req.Hash).Scan(&family)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, invalid
	}
	if err != nil {
		return nil, fmt.Errorf("finding a replayed code: %w", err)
	}
	if err := s.revokeFamily(ctx, family); err != nil {
		return nil, fmt.Errorf("revoking a replayed code's tokens: %w", err)
	}
	s.log.WarnContext(ctx, "authorization code replayed; its grant is revoked")
	return nil, invalid
}

// revokeFamily revokes a refresh family and kills its grant (every
// access token issued from it) in one transaction.
func (s *Service) revokeFamily(ctx context.Context, family string) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `UPDATE oauth_refresh_tokens SET revoked = now() WHERE family = $1 AND revoked IS NULL`, family); err != nil {
		return err
	}
	if err := killGrant(ctx, tx, family); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func (s *Service) createOAuthRefresh(ctx context.Context, req *accounts.OAuthRefresh) (*wire.Empty, error) {
	if err := validRefresh(req); err != nil {
		return nil, err
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM oauth_refresh_tokens WHERE expires < now()`); err != nil {
		return nil, fmt.Errorf("dropping expired refresh tokens: %w", err)
	}
	if err := insertRefresh(ctx, s.pool, req); err != nil {
		return nil, err
	}
	return &wire.Empty{}, nil
}

func validRefresh(r *accounts.OAuthRefresh) error {
	if len(r.Hash) != 64 || r.ClientID == "" || r.Resource == "" {
		return wire.Errorf(wire.InvalidArgument, "a refresh token needs a hash, a client and a resource")
	}
	if _, err := uuid.Parse(r.Family); err != nil {
		return wire.Errorf(wire.InvalidArgument, "family %q is not a UUID", r.Family)
	}
	if _, err := uuid.Parse(r.AccountID); err != nil {
		return wire.Errorf(wire.InvalidArgument, "account id %q is not a UUID", r.AccountID)
	}
	if !r.Expires.After(time.Now()) {
		return wire.Errorf(wire.InvalidArgument, "the refresh token is already expired")
	}
	return nil
}

func insertRefresh(ctx context.Context, q querier, r *accounts.OAuthRefresh) error {
	var one int
	err := q.QueryRow(ctx, `INSERT INTO oauth_refresh_tokens (hash, family, client_id, account_id, scope, resource, expires)
		SELECT $1, $2, $3, id, $5, $6, $7 FROM accounts WHERE id = $4 AND NOT disabled
		RETURNING 1`,
		r.Hash, r.Family, r.ClientID, r.AccountID, r.Scope, r.Resource, r.Expires).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return wire.Errorf(wire.FailedPrecondition, "the account is missing or disabled")
	}
	if err != nil {
		return fmt.Errorf("storing a refresh token: %w", err)
	}
	return nil
}

func (s *Service) rotateOAuthRefresh(ctx context.Context, req *accounts.OAuthRefreshRotateRequest) (*accounts.OAuthRefresh, error) {
	invalid := wire.Errorf(wire.Unauthenticated, "the refresh token is invalid, expired or revoked")
	if len(req.Hash) != 64 {
		return nil, invalid
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("rotating a refresh token: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	old := accounts.OAuthRefresh{Hash: req.Hash}
	var used, revoked *time.Time
	var disabled bool
	err = tx.QueryRow(ctx, `SELECT r.family, r.client_id, r.account_id, r.scope, r.resource, r.expires, r.used, r.revoked, a.disabled
		FROM oauth_refresh_tokens r JOIN accounts a ON a.id = r.account_id
		WHERE r.hash = $1 FOR UPDATE OF r`, req.Hash).
		Scan(&old.Family, &old.ClientID, &old.AccountID, &old.Scope, &old.Resource, &old.Expires, &used, &revoked, &disabled)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, invalid
	}
	if err != nil {
		return nil, fmt.Errorf("reading a refresh token: %w", err)
	}
	if old.ClientID != req.ClientID || revoked != nil || disabled || !old.Expires.After(time.Now()) {
		return nil, invalid
	}
	if used != nil {
		// Reuse of a rotated token: one of the two holders is a thief, and
		// we cannot tell which, so the whole family goes (OAuth 2.1 §4.3.1).
		if _, err := tx.Exec(ctx, `UPDATE oauth_refresh_tokens SET revoked = now() WHERE family = $1 AND revoked IS NULL`, old.Family); err != nil {
			return nil, fmt.Errorf("revoking a reused refresh family: %w", err)
		}
		if err := killGrant(ctx, tx, old.Family); err != nil {
			return nil, fmt.Errorf("revoking a reused refresh family: %w", err)
		}
		if err := tx.Commit(ctx); err != nil {
			return nil, fmt.Errorf("revoking a reused refresh family: %w", err)
		}
		s.log.WarnContext(ctx, "refresh token reused; its family is revoked", "client_id", old.ClientID)
		return nil, invalid
	}
	next := req.Next
	next.Family, next.ClientID, next.AccountID, next.Resource = old.Family, old.ClientID, old.AccountID, old.Resource
	if next.Scope == "" {
		next.Scope = old.Scope
	}
	for _, sc := range strings.Fields(next.Scope) {
		if !slices.Contains(strings.Fields(old.Scope), sc) {
			return nil, wire.Errorf(wire.InvalidArgument, "scope %q exceeds the grant", sc)
		}
	}
	if err := validRefresh(&next); err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `UPDATE oauth_refresh_tokens SET used = now() WHERE hash = $1`, req.Hash); err != nil {
		return nil, fmt.Errorf("spending a refresh token: %w", err)
	}
	if err := insertRefresh(ctx, tx, &next); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("rotating a refresh token: %w", err)
	}
	return &old, nil
}

func (s *Service) revokeOAuthRefresh(ctx context.Context, req *accounts.OAuthRefreshRevokeRequest) (*wire.Empty, error) {
	family := req.Family
	if family == "" {
		err := s.pool.QueryRow(ctx, `SELECT family FROM oauth_refresh_tokens WHERE hash = $1 AND ($2 = '' OR client_id = $2)`,
			req.Hash, req.ClientID).Scan(&family)
		if errors.Is(err, pgx.ErrNoRows) {
			return &wire.Empty{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("finding a refresh token: %w", err)
		}
	}
	if _, err := uuid.Parse(family); err != nil {
		return nil, wire.Errorf(wire.InvalidArgument, "family %q is not a UUID", family)
	}
	// RFC 7009 §2.1: the access tokens of the grant go with it.
	if err := s.revokeFamily(ctx, family); err != nil {
		return nil, fmt.Errorf("revoking a refresh family: %w", err)
	}
	return &wire.Empty{}, nil
}
