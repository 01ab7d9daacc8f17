package authn

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mirobody/mirobody-go/services/wire"
)

// oneSession knows the cookie value "good", whose CSRF token is "t".
type oneSession struct{}

func (oneSession) VerifySession(_ context.Context, v string) (*Principal, string, error) {
	if v != "good" {
		return nil, "", wire.Errorf(wire.Unauthenticated, "invalid session")
	}
	return &Principal{AccountID: "a1", Scopes: []string{"api"}}, "t", nil
}

// TestSessionCookie: the web session cookie authenticates requests under
// its path only (never /mcp), and a state-changing one only with its
// CSRF token.
func TestSessionCookie(t *testing.T) {
	a, err := New(Options{Sessions: oneSession{}, SessionCookie: "web", SessionPath: "/api", Limits: NewLimits(LimitsOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, method, path, cookie, csrf string
		account                          string
		code                             wire.Code
	}{
		{"read", http.MethodGet, "/api/me", "good", "", "a1", ""},
		{"write with the token", http.MethodPost, "/api/keys", "good", "t", "a1", ""},
		{"write without the token", http.MethodPost, "/api/keys", "good", "", "", wire.PermissionDenied},
		{"write with a wrong token", http.MethodDelete, "/api/keys/k", "good", "x", "", wire.PermissionDenied},
		{"unknown cookie", http.MethodGet, "/api/me", "bad", "", "", wire.Unauthenticated},
		{"/mcp ignores the cookie", http.MethodPost, "/mcp", "good", "t", "", ""},
		{"a path merely starting with /api", http.MethodGet, "/apix", "good", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p *Principal
			var perr error
			h := a.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				p, perr = FromContext(r.Context())
			}), func(http.ResponseWriter, *http.Request, error) { t.Error("rejected") })
			r := httptest.NewRequest(tc.method, tc.path, nil)
			r.AddCookie(&http.Cookie{Name: "web", Value: tc.cookie})
			if tc.csrf != "" {
				r.Header.Set(CSRFHeader, tc.csrf)
			}
			h.ServeHTTP(httptest.NewRecorder(), r)
			if (tc.code == "") != (perr == nil) || (tc.code != "" && !wire.IsCode(perr, tc.code)) {
				t.Fatalf("error %v, want code %q", perr, tc.code)
			}
			got := ""
			if p != nil {
				got = p.AccountID
			}
			if got != tc.account {
				t.Errorf("account %q, want %q", got, tc.account)
			}
		})
	}
}
