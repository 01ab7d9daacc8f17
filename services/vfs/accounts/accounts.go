// Package accounts is the vfs-svc contract for identities: accounts, API
// keys and the state of the gateway's OAuth authorization server (signing
// keys, registered clients, codes and refresh tokens).
package accounts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Endpoints for accounts and API keys.
var (
	AccountsCreate = wire.Endpoint[AccountCreateRequest, Account]{Subject: "vfs.accounts.create"}
	AccountsGet    = wire.Endpoint[AccountGetRequest, Account]{Subject: "vfs.accounts.get", Idempotent: true}
	AccountsLogin  = wire.Endpoint[AccountLoginRequest, Account]{Subject: "vfs.accounts.login", Idempotent: true}
	KeysCreate     = wire.Endpoint[KeyCreateRequest, KeyCreateResponse]{Subject: "vfs.keys.create"}
	KeysList       = wire.Endpoint[KeyListRequest, KeyListResponse]{Subject: "vfs.keys.list", Idempotent: true}
	KeysRevoke     = wire.Endpoint[KeyRevokeRequest, APIKey]{Subject: "vfs.keys.revoke"}
	KeysVerify     = wire.Endpoint[KeyVerifyRequest, KeyVerifyResponse]{Subject: "vfs.keys.verify", Idempotent: true}
	// KeyRevoked is published after a key is revoked, so that caches drop it.
	KeyRevoked = wire.Event[KeyVerifyResponse]{Subject: "events.keys.revoked"}
)

// KeyPrefix starts every Mirobody API key.
const KeyPrefix = "mb_"

// Scopes an API key can hold.
const (
	// ScopeMCP admits the key at /mcp.
	ScopeMCP = "mcp"
	// ScopeAPI admits the key at /api.
	ScopeAPI = "api"
)

// KeyScopes returns every scope a key can hold, in their canonical order.
// A key created without scopes gets them all.
func KeyScopes() []string { return []string{ScopeMCP, ScopeAPI} }

// Account is a user account. The password hash never leaves vfs-svc.
type Account struct {
	ID       string    `json:"id"`
	Email    string    `json:"email"`
	Created  time.Time `json:"created"`
	Disabled bool      `json:"disabled"`
}

// AccountCreateRequest creates an account; Password may be empty for
// accounts that only use API keys.
type AccountCreateRequest struct {
	Email    string `json:"email"`
	Password string `json:"password,omitempty"`
}

// AccountGetRequest finds an account by id or by email.
type AccountGetRequest struct {
	ID    string `json:"id,omitempty"`
	Email string `json:"email,omitempty"`
}

// AccountLoginRequest checks an email and password.
type AccountLoginRequest struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

// APIKey describes a key; the secret itself is only in KeyCreateResponse.
type APIKey struct {
	ID        string     `json:"id"`
	AccountID string     `json:"account_id"`
	Name      string     `json:"name"`
	Prefix    string     `json:"prefix"`
	Scopes    []string   `json:"scopes"`
	Created   time.Time  `json:"created"`
	LastUsed  *time.Time `json:"last_used,omitempty"`
	Revoked   *time.Time `json:"revoked,omitempty"`
}

// KeyCreateRequest creates a key for an account.
type KeyCreateRequest struct {
	AccountID string   `json:"account_id"`
	Name      string   `json:"name"`
	Scopes    []string `json:"scopes,omitempty"`
}

// KeyCreateResponse carries the new key's secret, shown once.
type KeyCreateResponse struct {
	Key    string `json:"key"`
	APIKey APIKey `json:"api_key"`
}

// KeyListRequest lists an account's keys.
type KeyListRequest struct {
	AccountID string `json:"account_id"`
}

// KeyListResponse is the account's keys, newest first.
type KeyListResponse struct {
	Keys []APIKey `json:"keys"`
}

// KeyRevokeRequest revokes one key of an account.
type KeyRevokeRequest struct {
	AccountID string `json:"account_id"`
	KeyID     string `json:"key_id"`
}

// KeyVerifyRequest checks a key by its hash (see HashKey), so the secret
// does not travel on the bus after creation.
type KeyVerifyRequest struct {
	Hash string `json:"hash"`
}

// KeyVerifyResponse identifies the key's account.
type KeyVerifyResponse struct {
	AccountID string   `json:"account_id"`
	KeyID     string   `json:"key_id"`
	Scopes    []string `json:"scopes"`
}

// HashKey returns the stored form of an API key. Keys carry 256 random
// bits, so a fast hash is enough: there is nothing to brute-force.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// Accounts is the typed client for accounts and API keys.
type Accounts struct{ c *wire.Client }

// NewAccounts returns an Accounts client over c.
func NewAccounts(c *wire.Client) *Accounts { return &Accounts{c: c} }

// Create creates an account.
func (a *Accounts) Create(ctx context.Context, req *AccountCreateRequest) (*Account, error) {
	return AccountsCreate.Call(ctx, a.c, req)
}

// Get finds an account.
func (a *Accounts) Get(ctx context.Context, req *AccountGetRequest) (*Account, error) {
	return AccountsGet.Call(ctx, a.c, req)
}

// Login returns the account whose email and password match; anything else
// is unauthenticated, with no hint of which part was wrong.
func (a *Accounts) Login(ctx context.Context, req *AccountLoginRequest) (*Account, error) {
	return AccountsLogin.Call(ctx, a.c, req)
}

// CreateKey creates an API key.
func (a *Accounts) CreateKey(ctx context.Context, req *KeyCreateRequest) (*KeyCreateResponse, error) {
	return KeysCreate.Call(ctx, a.c, req)
}

// ListKeys lists an account's keys.
func (a *Accounts) ListKeys(ctx context.Context, req *KeyListRequest) (*KeyListResponse, error) {
	return KeysList.Call(ctx, a.c, req)
}

// RevokeKey revokes a key.
func (a *Accounts) RevokeKey(ctx context.Context, req *KeyRevokeRequest) (*APIKey, error) {
	return KeysRevoke.Call(ctx, a.c, req)
}

// VerifyKey resolves a key hash to its account; unknown or revoked keys are
// unauthenticated.
func (a *Accounts) VerifyKey(ctx context.Context, req *KeyVerifyRequest) (*KeyVerifyResponse, error) {
	return KeysVerify.Call(ctx, a.c, req)
}
