package accounts

import (
	"context"
	"time"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Endpoints of the OAuth authorization server's state (gateway/design.md "OAuth
// authorization server"). The gateway runs the protocol; vfs-svc only keeps
// what must survive a restart or be shared by replicas.
var (
	OAuthKeysRotate      = wire.Endpoint[SigningKeyRotateRequest, SigningKeyListResponse]{Subject: "vfs.oauth.keys.rotate"}
	OAuthKeysList        = wire.Endpoint[SigningKeyListRequest, SigningKeyListResponse]{Subject: "vfs.oauth.keys.list", Idempotent: true}
	OAuthClientsRegister = wire.Endpoint[OAuthClient, OAuthClient]{Subject: "vfs.oauth.clients.register"}
	OAuthClientsGet      = wire.Endpoint[OAuthClientGetRequest, OAuthClient]{Subject: "vfs.oauth.clients.get", Idempotent: true}
	OAuthCodesCreate     = wire.Endpoint[OAuthCode, wire.Empty]{Subject: "vfs.oauth.codes.create"}
	OAuthCodesConsume    = wire.Endpoint[OAuthCodeConsumeRequest, OAuthCode]{Subject: "vfs.oauth.codes.consume"}
	OAuthRefreshCreate   = wire.Endpoint[OAuthRefresh, wire.Empty]{Subject: "vfs.oauth.refresh.create"}
	OAuthRefreshRotate   = wire.Endpoint[OAuthRefreshRotateRequest, OAuthRefresh]{Subject: "vfs.oauth.refresh.rotate"}
	OAuthRefreshRevoke   = wire.Endpoint[OAuthRefreshRevokeRequest, wire.Empty]{Subject: "vfs.oauth.refresh.revoke"}
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

// OAuth is the typed client for the authorization server's state.
type OAuth struct{ c *wire.Client }

// NewOAuth returns an OAuth client over c.
func NewOAuth(c *wire.Client) *OAuth { return &OAuth{c: c} }

// RotateKeys stores a new signing key when due and returns every key.
func (o *OAuth) RotateKeys(ctx context.Context, req *SigningKeyRotateRequest) (*SigningKeyListResponse, error) {
	return OAuthKeysRotate.Call(ctx, o.c, req)
}

// ListKeys returns every stored signing key, newest first.
func (o *OAuth) ListKeys(ctx context.Context, req *SigningKeyListRequest) (*SigningKeyListResponse, error) {
	return OAuthKeysList.Call(ctx, o.c, req)
}

// RegisterClient stores a dynamically registered client.
func (o *OAuth) RegisterClient(ctx context.Context, req *OAuthClient) (*OAuthClient, error) {
	return OAuthClientsRegister.Call(ctx, o.c, req)
}

// GetClient finds a registered client; unknown ids are not_found.
func (o *OAuth) GetClient(ctx context.Context, req *OAuthClientGetRequest) (*OAuthClient, error) {
	return OAuthClientsGet.Call(ctx, o.c, req)
}

// CreateCode stores an authorization code.
func (o *OAuth) CreateCode(ctx context.Context, req *OAuthCode) (*wire.Empty, error) {
	return OAuthCodesCreate.Call(ctx, o.c, req)
}

// ConsumeCode uses a code once; unknown, expired or used codes are
// unauthenticated.
func (o *OAuth) ConsumeCode(ctx context.Context, req *OAuthCodeConsumeRequest) (*OAuthCode, error) {
	return OAuthCodesConsume.Call(ctx, o.c, req)
}

// CreateRefresh stores the first refresh token of a family.
func (o *OAuth) CreateRefresh(ctx context.Context, req *OAuthRefresh) (*wire.Empty, error) {
	return OAuthRefreshCreate.Call(ctx, o.c, req)
}

// RotateRefresh spends a refresh token and returns the grant it carried.
func (o *OAuth) RotateRefresh(ctx context.Context, req *OAuthRefreshRotateRequest) (*OAuthRefresh, error) {
	return OAuthRefreshRotate.Call(ctx, o.c, req)
}

// RevokeRefresh revokes a refresh token's family.
func (o *OAuth) RevokeRefresh(ctx context.Context, req *OAuthRefreshRevokeRequest) (*wire.Empty, error) {
	return OAuthRefreshRevoke.Call(ctx, o.c, req)
}
