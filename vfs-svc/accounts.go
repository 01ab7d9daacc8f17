package vfssvc

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/crypto/argon2"

	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// lastUsedEvery bounds how often a key's last_used is written: verifying a
// key reads it, and writes only when the stored value is older than this.
const lastUsedEvery = time.Minute

func (s *Service) registerAccounts(svc *wire.Service) error {
	return errors.Join(
		wire.Serve(svc, accounts.AccountsCreate, s.createAccount),
		wire.Serve(svc, accounts.AccountsGet, s.getAccount),
		wire.Serve(svc, accounts.AccountsLogin, s.login),
		wire.Serve(svc, accounts.KeysCreate, s.createKey),
		wire.Serve(svc, accounts.KeysList, s.listKeys),
		wire.Serve(svc, accounts.KeysRevoke, s.revokeKey),
		wire.Serve(svc, accounts.KeysVerify, s.verifyKey),
	)
}

func (s *Service) createAccount(ctx context.Context, req *accounts.AccountCreateRequest) (*accounts.Account, error) {
	email := strings.TrimSpace(req.Email)
	if addr, err := mail.ParseAddress(email); err != nil || addr.Address != email {
		return nil, wire.Errorf(wire.InvalidArgument, "email %q is not a valid address", req.Email)
	}
	var hash *string
	if req.Password != "" {
		if len(req.Password) < 8 {
			return nil, wire.Errorf(wire.InvalidArgument, "password must have at least 8 characters")
		}
		h, err := hashPassword(req.Password)
		if err != nil {
			return nil, err
		}
		hash = &h
	}
	a := accounts.Account{ID: uuid.NewString(), Email: email}
	err := s.pool.QueryRow(ctx,
		`INSERT INTO accounts (id, email, password_hash) VALUES ($1, $2, $3) RETURNING created`,
		a.ID, a.Email, hash).Scan(&a.Created)
	if isUniqueViolation(err) {
		return nil, wire.Errorf(wire.AlreadyExists, "an account with email %q exists", email)
	}
	if err != nil {
		return nil, fmt.Errorf("inserting account: %w", err)
	}
	return &a, nil
}

func (s *Service) getAccount(ctx context.Context, req *accounts.AccountGetRequest) (*accounts.Account, error) {
	var a accounts.Account
	var err error
	switch {
	case req.ID != "":
		if _, perr := uuid.Parse(req.ID); perr != nil {
			return nil, wire.Errorf(wire.InvalidArgument, "account id %q is not a UUID", req.ID)
		}
		err = s.pool.QueryRow(ctx, `SELECT id, email, created, disabled FROM accounts WHERE id = $1`, req.ID).
			Scan(&a.ID, &a.Email, &a.Created, &a.Disabled)
	case req.Email != "":
		err = s.pool.QueryRow(ctx, `SELECT id, email, created, disabled FROM accounts WHERE lower(email) = lower($1)`, req.Email).
			Scan(&a.ID, &a.Email, &a.Created, &a.Disabled)
	default:
		return nil, wire.Errorf(wire.InvalidArgument, "give an account id or an email")
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, wire.Errorf(wire.NotFound, "no such account")
	}
	if err != nil {
		return nil, fmt.Errorf("reading account: %w", err)
	}
	return &a, nil
}

func (s *Service) login(ctx context.Context, req *accounts.AccountLoginRequest) (*accounts.Account, error) {
	var a accounts.Account
	var hash *string
	err := s.pool.QueryRow(ctx, `SELECT id, email, created, disabled, password_hash FROM accounts WHERE lower(email) = lower($1)`,
		strings.TrimSpace(req.Email)).Scan(&a.ID, &a.Email, &a.Created, &a.Disabled, &hash)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("reading account: %w", err)
	}
	// An unknown email, an account without a password and a disabled one
	// cost the same argon2id work as a wrong password, so that the answer's
	// timing does not tell which emails exist.
	encoded := s.dummyHash
	if err == nil && hash != nil {
		encoded = *hash
	}
	ok := s.passwordMatches(encoded, req.Password)
	if err != nil || hash == nil || a.Disabled || !ok {
		return nil, wire.Errorf(wire.Unauthenticated, "wrong email or password")
	}
	return &a, nil
}

// passwordMatches checks pw against an encoded hash, counting the check
// (tests hold the unknown-email path to doing the same work).
func (s *Service) passwordMatches(encoded, pw string) bool {
	s.passwordChecks.Add(1)
	return checkPassword(encoded, pw)
}

func (s *Service) createKey(ctx context.Context, req *accounts.KeyCreateRequest) (*accounts.KeyCreateResponse, error) {
	acct, err := s.getAccount(ctx, &accounts.AccountGetRequest{ID: req.AccountID})
	if err != nil {
		return nil, err
	}
	if acct.Disabled {
		return nil, wire.Errorf(wire.FailedPrecondition, "account is disabled")
	}
	name := strings.TrimSpace(req.Name)
	if name == "" || len(name) > 100 {
		return nil, wire.Errorf(wire.InvalidArgument, "key name must have 1 to 100 characters")
	}
	scopes := req.Scopes
	if len(scopes) == 0 {
		scopes = accounts.KeyScopes()
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("generating key: %w", err)
	}
	key := accounts.KeyPrefix + base64.RawURLEncoding.EncodeToString(secret)
	k := accounts.APIKey{ID: uuid.NewString(), AccountID: acct.ID, Name: name, Prefix: key[:11], Scopes: scopes}
	err = s.pool.QueryRow(ctx,
		`INSERT INTO api_keys (id, account_id, name, prefix, hash, scopes) VALUES ($1, $2, $3, $4, $5, $6) RETURNING created`,
		k.ID, k.AccountID, k.Name, k.Prefix, accounts.HashKey(key), k.Scopes).Scan(&k.Created)
	if err != nil {
		return nil, fmt.Errorf("inserting key: %w", err)
	}
	return &accounts.KeyCreateResponse{Key: key, APIKey: k}, nil
}

func (s *Service) listKeys(ctx context.Context, req *accounts.KeyListRequest) (*accounts.KeyListResponse, error) {
	if _, err := uuid.Parse(req.AccountID); err != nil {
		return nil, wire.Errorf(wire.InvalidArgument, "account id %q is not a UUID", req.AccountID)
	}
	rows, err := s.pool.Query(ctx, `SELECT id, account_id, name, prefix, scopes, created, last_used, revoked
		FROM api_keys WHERE account_id = $1 ORDER BY created DESC`, req.AccountID)
	if err != nil {
		return nil, fmt.Errorf("listing keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, scanKey)
	if err != nil {
		return nil, fmt.Errorf("listing keys: %w", err)
	}
	return &accounts.KeyListResponse{Keys: keys}, nil
}

func scanKey(row pgx.CollectableRow) (accounts.APIKey, error) {
	var k accounts.APIKey
	err := row.Scan(&k.ID, &k.AccountID, &k.Name, &k.Prefix, &k.Scopes, &k.Created, &k.LastUsed, &k.Revoked)
	return k, err
}

func (s *Service) revokeKey(ctx context.Context, req *accounts.KeyRevokeRequest) (*accounts.APIKey, error) {
	if _, err := uuid.Parse(req.KeyID); err != nil {
		return nil, wire.Errorf(wire.InvalidArgument, "key id %q is not a UUID", req.KeyID)
	}
	if _, err := uuid.Parse(req.AccountID); err != nil {
		return nil, wire.Errorf(wire.InvalidArgument, "account id %q is not a UUID", req.AccountID)
	}
	rows, err := s.pool.Query(ctx, `UPDATE api_keys SET revoked = coalesce(revoked, now())
		WHERE id = $1 AND account_id = $2
		RETURNING id, account_id, name, prefix, scopes, created, last_used, revoked`, req.KeyID, req.AccountID)
	if err != nil {
		return nil, fmt.Errorf("revoking key: %w", err)
	}
	k, err := pgx.CollectExactlyOneRow(rows, scanKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, wire.Errorf(wire.NotFound, "no key %s for this account", req.KeyID)
	}
	if err != nil {
		return nil, fmt.Errorf("revoking key: %w", err)
	}
	if err := accounts.KeyRevoked.Publish(ctx, s.node.Client, &accounts.KeyVerifyResponse{AccountID: k.AccountID, KeyID: k.ID}); err != nil {
		s.log.WarnContext(ctx, "publishing key revocation failed", "key_id", k.ID, "err", err)
	}
	return &k, nil
}

func (s *Service) verifyKey(ctx context.Context, req *accounts.KeyVerifyRequest) (*accounts.KeyVerifyResponse, error) {
	if len(req.Hash) != 64 {
		return nil, wire.Errorf(wire.Unauthenticated, "invalid API key")
	}
	var r accounts.KeyVerifyResponse
	var lastUsed *time.Time
	var disabled bool
	err := s.pool.QueryRow(ctx, `SELECT k.id, k.account_id, k.scopes, k.last_used, a.disabled
		FROM api_keys k JOIN accounts a ON a.id = k.account_id
		WHERE k.hash = $1 AND k.revoked IS NULL`, req.Hash).Scan(&r.KeyID, &r.AccountID, &r.Scopes, &lastUsed, &disabled)
	if errors.Is(err, pgx.ErrNoRows) || disabled {
		return nil, wire.Errorf(wire.Unauthenticated, "invalid API key")
	}
	if err != nil {
		return nil, fmt.Errorf("verifying key: %w", err)
	}
	if lastUsed == nil || time.Since(*lastUsed) > lastUsedEvery {
		if _, err := s.pool.Exec(ctx, `UPDATE api_keys SET last_used = now() WHERE id = $1`, r.KeyID); err != nil {
			s.log.WarnContext(ctx, "recording key use failed", "key_id", r.KeyID, "err", err)
		}
	}
	return &r, nil
}

// argon2id parameters (RFC 9106, second recommended option).
const (
	argonTime    = 3
	argonMemory  = 64 * 1024
	argonThreads = 2
	argonKeyLen  = 32
)

func hashPassword(pw string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("generating salt: %w", err)
	}
	sum := argon2.IDKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=19$m=%d,t=%d,p=%d$%s$%s", argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(sum)), nil
}

// checkPassword reports whether pw matches an encoded argon2id hash.
func checkPassword(encoded, pw string) bool {
	var m, t uint32
	var p uint8
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil {
		return false
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[4])
	want, err2 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil {
		return false
	}
	got := argon2.IDKey([]byte(pw), salt, t, m, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}
