package gateway

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/registry"
)

// TestFlowCookie: the cookie that binds an external server's OAuth flow
// to a browser is HttpOnly, SameSite=Lax, Secure on an https public URL
// and sent to the callback only; it opens for its own state only, and
// not after tampering (issue 15, finding 4).
func TestFlowCookie(t *testing.T) {
	box, err := newFlowBox("a test secret key of enough bytes..")
	must(t, err)
	s := &Service{opts: Options{Config: &conf.Config{MCPPublicURL: "https://mcp.example"}}, flows: box}
	e := echo.New()
	rec := httptest.NewRecorder()
	must(t, s.setFlowCookie(e.NewContext(httptest.NewRequest(http.MethodPost, "/api/mcp-servers", nil), rec), "acct", "cal", "state-1"))
	cookies := rec.Result().Cookies()
	if len(cookies) != 1 {
		t.Fatalf("cookies %v", cookies)
	}
	ck := cookies[0]
	if !ck.HttpOnly || !ck.Secure || ck.SameSite != http.SameSiteLaxMode || ck.Path != registry.OAuthCallbackPath || ck.MaxAge != 600 {
		t.Fatalf("flow cookie %+v", ck)
	}
	open := func(state string, c *http.Cookie) *flow {
		req := httptest.NewRequest(http.MethodGet, registry.OAuthCallbackPath, nil)
		if c != nil {
			req.AddCookie(c)
		}
		return s.openFlowCookie(e.NewContext(req, httptest.NewRecorder()), state)
	}
	if f := open("state-1", ck); f == nil || f.AccountID != "acct" || f.Name != "cal" {
		t.Fatalf("the flow's own browser: %+v", f)
	}
	renamed := *ck
	renamed.Name = flowCookieName("state-2")
	tampered := *ck
	tampered.Value = ck.Value[:len(ck.Value)-2] + "AA"
	for name, tc := range map[string]struct {
		state  string
		cookie *http.Cookie
	}{
		"no cookie (another browser)":      {"state-1", nil},
		"another state":                    {"state-2", ck},
		"the cookie renamed for the state": {"state-2", &renamed},
		"tampered":                         {"state-1", &tampered},
		"no state":                         {"", ck},
	} {
		if f := open(tc.state, tc.cookie); f != nil {
			t.Errorf("%s: opened %+v", name, f)
		}
	}
}
