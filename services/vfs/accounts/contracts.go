package accounts

import "github.com/mirobody/mirobody-go/services/wire"

// Contracts lists every endpoint and event of the package, for the golden
// tests and for the server's check that it serves them all.
func Contracts() []wire.Contract {
	return []wire.Contract{
		AccountsCreate, AccountsGet, AccountsLogin,
		KeysCreate, KeysList, KeysRevoke, KeysVerify, KeyRevoked,
		OAuthKeysRotate, OAuthKeysList, OAuthClientsRegister, OAuthClientsGet,
		OAuthCodesCreate, OAuthCodesConsume, OAuthRefreshCreate, OAuthRefreshRotate, OAuthRefreshRevoke,
		OAuthRevocationsAdd, OAuthRevocationsList, OAuthLoginsAttempt, OAuthLoginsSucceeded,
	}
}
