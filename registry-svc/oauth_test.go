package registrysvc

import (
	"context"
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/wire"
)

// TestExternalOAuthRefusals: an OAuth add that cannot work is refused
// with a message saying why, before anything is stored, and a callback
// whose state names no flow is refused without a lookup. The whole flow
// against a real authorization server is TestExternalServerOAuth in
// services/stack.
func TestExternalOAuthRefusals(t *testing.T) {
	e := start(t, map[string]string{"MCP_CLIENT_ALLOW_PRIVATE": "true"})
	plain := echoServer(t, servicetest.MCPServerOptions{}) // no OAuth metadata
	const acct = "b9f3c1de-0000-4000-8000-000000000001"
	const redirect = "https://mirobody.example" + registry.OAuthCallbackPath
	for _, tc := range []struct {
		name string
		req  registry.ServerAddRequest
		want string
	}{
		{"unknown auth", registry.ServerAddRequest{Auth: "basic", URL: plain.URL}, "auth must be none, bearer, headers or oauth"},
		{"oauth with a token", registry.ServerAddRequest{Auth: "oauth", URL: plain.URL, AccessToken: "t", RedirectURI: redirect}, "takes no access_token"},
		{"no callback URL", registry.ServerAddRequest{Auth: "oauth", URL: plain.URL}, "callback URL"},
		{"no OAuth metadata", registry.ServerAddRequest{Auth: "oauth", URL: plain.URL, RedirectURI: redirect}, "reading the server's OAuth metadata"},
	} {
		req := tc.req
		req.AccountID, req.Name = acct, "x"
		_, err := e.client.AddServer(context.Background(), &req)
		if !wire.IsCode(err, wire.InvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want invalid_argument containing %q", tc.name, err, tc.want)
		}
	}
	for _, req := range []registry.ServerOAuthCallbackRequest{
		{State: "", AccountID: acct, Name: "x"},
		{State: "s", AccountID: acct, Name: "Bad Name"}, {State: "s", AccountID: "not-a-uuid", Name: "x"}, {State: "s", Name: "x"},
	} {
		req.Code = "c"
		_, err := e.client.OAuthCallback(context.Background(), &req)
		if !wire.IsCode(err, wire.FailedPrecondition) {
			t.Errorf("callback %+v: %v, want failed_precondition", req, err)
		}
	}
	for _, req := range []registry.ServerOAuthStartRequest{
		{AccountID: acct, Name: "x"}, {AccountID: acct, Name: "Bad Name", Link: "l"}, {AccountID: "not-a-uuid", Name: "x", Link: "l"},
	} {
		_, err := e.client.OAuthStart(context.Background(), &req)
		if !wire.IsCode(err, wire.FailedPrecondition) {
			t.Errorf("start %+v: %v, want failed_precondition", req, err)
		}
	}
}
