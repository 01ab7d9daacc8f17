package accounts

import (
	"context"
	"time"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Subjects of the OAuth authorization server's state (SPEC §6). The
// gateway runs the protocol; vfs-svc only keeps what must survive a
// restart or be shared by replicas.
const (
	SubjectOAuthKeysRotate      = "vfs.oauth.keys.rotate"
	SubjectOAuthKeysList        = "vfs.oauth.keys.list"
	SubjectOAuthClientsRegister = "vfs.oauth.clients.register"
	SubjectOAuthClientsGet      = "vfs.oauth.clients.get"
	SubjectOAuthCodesCreate     = "vfs.oauth.codes.create"
	SubjectOAuthCodesConsume    = "vfs.oauth.codes.consume"
	SubjectOAuthRefreshCreate   = "vfs.oauth.refresh.create"
	SubjectOAuthRefreshRotate   = "vfs.oauth.refresh.rotate"
	SubjectOAuthRefreshRevoke   = "vfs.oauth.refresh.revoke"
)

// SigningKey is one access-token signing key. SealedPrivate is sealed by
// the gateway (AES-GCM under a key derived from SECRET_KEY) before it
// leaves it, so vfs-svc stores, and the bus carries, only ciphertext.
type SigningKey struct {
	ID            string    `json:"id"`
	Alg           string    `json:"alg"`
	Public        []byte    `json:"public"`
	SealedPrivate []byte    `json:"sealed_private"`
	Created       time.Time `json:"created"`
}

// SigningKeyRotateRequest stores Candidate unless the newest key is younger
// than MaxAgeS (or Force is set), and drops keys older than DropAfterS.
// Replicas race harmlessly: the first candidate wins, the others get it.
type SigningKeyRotateRequest struct {
	Candidate  SigningKey `json:"candidate"`
	MaxAgeS    int        `json:"max_age_s"`
	DropAfterS int        `json:"drop_after_s"`
	// Force stores the candidate whatever the newest key's age: the
	// gateway could not open the newest key (SECRET_KEY changed).
	Force bool `json:"force,omitempty"`
}

// SigningKeyListRequest lists the stored signing keys.
type SigningKeyListRequest struct{}

// SigningKeyListResponse is every stored key, newest (the one that signs)
// first.
type SigningKeyListResponse struct {
	Keys []SigningKey `json:"keys"`
}

// OAuthClient is a client registered by RFC 7591 dynamic registration.
// Clients named by a Client ID Metadata Document are not stored: the
// gateway fetches their document.
type OAuthClient struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	RedirectURIs []string  `json:"redirect_uris"`
	Created      time.Time `json:"created"`
}

// OAuthClientGetRequest finds a registered client.
type OAuthClientGetRequest struct {
	ID string `json:"id"`
}

// OAuthCode is an authorization code grant, stored by the hash of the
// code (HashKey) until it is used once or expires.
type OAuthCode struct {
	Hash        string `json:"hash"`
	ClientID    string `json:"client_id"`
	AccountID   string `json:"account_id"`
	RedirectURI string `json:"redirect_uri"`
	Scope       string `json:"scope"`
	Resource    string `json:"resource"`
	// Challenge is the PKCE S256 code challenge.
	Challenge string    `json:"challenge"`
	Expires   time.Time `json:"expires"`
	// Family groups the refresh tokens issued from this code, so that a
	// replayed code or a reused refresh token revokes them all.
	Family string `json:"family,omitempty"`
}

// OAuthCodeConsumeRequest uses a code once. A second use is
// unauthenticated and revokes the refresh tokens issued from the code.
type OAuthCodeConsumeRequest struct {
	Hash string `json:"hash"`
}

// OAuthRefresh is a refresh token, stored by hash.
type OAuthRefresh struct {
	Hash      string    `json:"hash"`
	Family    string    `json:"family"`
	ClientID  string    `json:"client_id"`
	AccountID string    `json:"account_id"`
	Scope     string    `json:"scope"`
	Resource  string    `json:"resource"`
	Expires   time.Time `json:"expires"`
}

// OAuthRefreshRotateRequest spends the refresh token Hash of ClientID and
// stores Next (same family; an empty Next.Scope keeps the grant's, a wider
// one is invalid_argument) in its place. Presenting a spent token again is
// reuse: the whole family is revoked and the call is unauthenticated.
type OAuthRefreshRotateRequest struct {
	Hash     string       `json:"hash"`
	ClientID string       `json:"client_id"`
	Next     OAuthRefresh `json:"next"`
}

// OAuthRefreshRevokeRequest revokes the family of the refresh token Hash
// (RFC 7009); ClientID, when set, must be the token's client. Unknown
// tokens are not an error.
type OAuthRefreshRevokeRequest struct {
	Hash     string `json:"hash,omitempty"`
	ClientID string `json:"client_id,omitempty"`
	// Family revokes a family directly (an access token's grant).
	Family string `json:"family,omitempty"`
}

// Empty is the answer of calls that return nothing.
type Empty struct{}

// OAuth is the typed client for the authorization server's state.
type OAuth struct{ c *wire.Client }

// NewOAuth returns an OAuth client over c.
func NewOAuth(c *wire.Client) *OAuth { return &OAuth{c: c} }

// RotateKeys stores a new signing key when due and returns every key.
func (o *OAuth) RotateKeys(ctx context.Context, req *SigningKeyRotateRequest) (*SigningKeyListResponse, error) {
	return wire.Call[SigningKeyRotateRequest, SigningKeyListResponse](ctx, o.c, SubjectOAuthKeysRotate, req)
}

// ListKeys returns every stored signing key, newest first.
func (o *OAuth) ListKeys(ctx context.Context, req *SigningKeyListRequest) (*SigningKeyListResponse, error) {
	return wire.Call[SigningKeyListRequest, SigningKeyListResponse](ctx, o.c, SubjectOAuthKeysList, req)
}

// RegisterClient stores a dynamically registered client.
func (o *OAuth) RegisterClient(ctx context.Context, req *OAuthClient) (*OAuthClient, error) {
	return wire.Call[OAuthClient, OAuthClient](ctx, o.c, SubjectOAuthClientsRegister, req)
}

// GetClient finds a registered client; unknown ids are not_found.
func (o *OAuth) GetClient(ctx context.Context, req *OAuthClientGetRequest) (*OAuthClient, error) {
	return wire.Call[OAuthClientGetRequest, OAuthClient](ctx, o.c, SubjectOAuthClientsGet, req)
}

// CreateCode stores an authorization code.
func (o *OAuth) CreateCode(ctx context.Context, req *OAuthCode) (*Empty, error) {
	return wire.Call[OAuthCode, Empty](ctx, o.c, SubjectOAuthCodesCreate, req)
}

// ConsumeCode uses a code once; unknown, expired or used codes are
// unauthenticated.
func (o *OAuth) ConsumeCode(ctx context.Context, req *OAuthCodeConsumeRequest) (*OAuthCode, error) {
	return wire.Call[OAuthCodeConsumeRequest, OAuthCode](ctx, o.c, SubjectOAuthCodesConsume, req)
}

// CreateRefresh stores the first refresh token of a family.
func (o *OAuth) CreateRefresh(ctx context.Context, req *OAuthRefresh) (*Empty, error) {
	return wire.Call[OAuthRefresh, Empty](ctx, o.c, SubjectOAuthRefreshCreate, req)
}

// RotateRefresh spends a refresh token and returns the grant it carried.
func (o *OAuth) RotateRefresh(ctx context.Context, req *OAuthRefreshRotateRequest) (*OAuthRefresh, error) {
	return wire.Call[OAuthRefreshRotateRequest, OAuthRefresh](ctx, o.c, SubjectOAuthRefreshRotate, req)
}

// RevokeRefresh revokes a refresh token's family.
func (o *OAuth) RevokeRefresh(ctx context.Context, req *OAuthRefreshRevokeRequest) (*Empty, error) {
	return wire.Call[OAuthRefreshRevokeRequest, Empty](ctx, o.c, SubjectOAuthRefreshRevoke, req)
}
