package accounts

import (
	"context"
	"time"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Endpoints of the authorization server's durable revocations and of the
// login attempt counters. They sit under vfs.oauth, which only the gateway
// and the operator may call.
var (
	OAuthRevocationsAdd  = wire.Endpoint[RevocationAddRequest, wire.Empty]{Subject: "vfs.oauth.revocations.add"}
	OAuthRevocationsList = wire.Endpoint[RevocationListRequest, RevocationListResponse]{Subject: "vfs.oauth.revocations.list"}
	OAuthLoginsAttempt   = wire.Endpoint[LoginAttemptRequest, LoginAttemptResponse]{Subject: "vfs.oauth.logins.attempt"}
	OAuthLoginsSucceeded = wire.Endpoint[LoginAttemptRequest, wire.Empty]{Subject: "vfs.oauth.logins.succeeded"}
)

// Kinds of revocation.
const (
	// RevokedToken names one access token by its jti.
	RevokedToken = "token"
	// RevokedGrant names a grant (a refresh family, the gid claim): every
	// access token issued from it is refused.
	RevokedGrant = "grant"
)

// GrantKillTTL is how long a killed grant is remembered: longer than any
// access token issued from it lives (one hour, plus clock skew).
const GrantKillTTL = time.Hour + 5*time.Minute

// Revocation is one revoked credential, refused until Until (after which
// it would have expired anyway).
type Revocation struct {
	Kind  string    `json:"kind"`
	ID    string    `json:"id"`
	Until time.Time `json:"until"`
}

// RevocationAddRequest stores revocations.
type RevocationAddRequest struct {
	Revocations []Revocation `json:"revocations"`
}

// RevocationListRequest lists the revocations still in force that were
// stored at or after Since (zero: all of them).
type RevocationListRequest struct {
	Since time.Time `json:"since,omitzero"`
}

// RevocationListResponse is the revocations and the store's clock, which
// the next request's Since is derived from (so replicas' clocks do not
// matter).
type RevocationListResponse struct {
	Revocations []Revocation `json:"revocations"`
	Now         time.Time    `json:"now"`
}

// LoginAttemptRequest reserves one password attempt for Email from IP.
// The attempt counts as a failure until LoginSucceeded says otherwise, so
// that parallel guesses cannot slip past the count.
type LoginAttemptRequest struct {
	Email string `json:"email"`
	IP    string `json:"ip"`
}

// LoginAttemptResponse says whether the attempt may go ahead: RetryAfterS
// > 0 refuses it, for that many seconds.
type LoginAttemptResponse struct {
	RetryAfterS int `json:"retry_after_s,omitempty"`
}

// Revocations is the typed client of the revocation and login-attempt
// subjects.
type Revocations struct{ c *wire.Client }

// NewRevocations returns a Revocations client over c.
func NewRevocations(c *wire.Client) *Revocations { return &Revocations{c: c} }

// Add stores revocations.
func (r *Revocations) Add(ctx context.Context, req *RevocationAddRequest) (*wire.Empty, error) {
	return OAuthRevocationsAdd.Call(ctx, r.c, req)
}

// List returns the revocations in force stored since req.Since.
func (r *Revocations) List(ctx context.Context, req *RevocationListRequest) (*RevocationListResponse, error) {
	return OAuthRevocationsList.Call(ctx, r.c, req)
}

// LoginAttempt reserves a password attempt, or says how long to wait.
func (r *Revocations) LoginAttempt(ctx context.Context, req *LoginAttemptRequest) (*LoginAttemptResponse, error) {
	return OAuthLoginsAttempt.Call(ctx, r.c, req)
}

// LoginSucceeded clears the email's failures and gives the IP back the
// attempt it reserved.
func (r *Revocations) LoginSucceeded(ctx context.Context, req *LoginAttemptRequest) (*wire.Empty, error) {
	return OAuthLoginsSucceeded.Call(ctx, r.c, req)
}
