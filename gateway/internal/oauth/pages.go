package oauth

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"html/template"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// Cookies of the login and consent pages. Their path is /oauth, so a
// browser never even sends them to /mcp or /api, and no code there reads
// them: a web session never authenticates an API call.
const (
	sessionCookie = "mirobody_oauth_session"
	csrfCookie    = "mirobody_oauth_csrf"
	cookiePath    = "/oauth"
)

// pageData fills the page template.
type pageData struct {
	// Page is "login", "consent", "error" or "done" (Title and Text).
	Page    string
	Title   string
	Error   string
	Text    string
	Request string
	CSRF    string
	Client  string
	// Verified says the client name comes from a metadata document served
	// by the client's own domain (ClientHost), not from a registration
	// anyone could make.
	Verified     bool
	ClientHost   string
	RedirectHost string
	Scopes       []string
	Email        string
}

// pages is the server-rendered login, consent and error page: plain HTML
// forms, no script.
var pages = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · Mirobody</title>
<style>
body{font-family:system-ui,sans-serif;background:#f4f5f7;margin:0;display:flex;justify-content:center}
main{background:#fff;max-width:26rem;width:100%;margin:4rem 1rem;padding:2rem;border-radius:12px;box-shadow:0 2px 12px #0002}
h1{font-size:1.3rem;margin-top:0}label{display:block;margin:.8rem 0 .3rem}
input[type=email],input[type=password]{width:100%;box-sizing:border-box;padding:.6rem;border:1px solid #bbb;border-radius:6px}
button{padding:.6rem 1.2rem;border-radius:6px;border:1px solid #335;margin:1rem .5rem 0 0;cursor:pointer}
button.primary{background:#335;color:#fff}.error{color:#a00}.muted{color:#666;font-size:.9rem}
</style></head><body><main>
{{if eq .Page "error"}}<h1>{{.Title}}</h1><p class="error">{{.Error}}</p>
{{else if eq .Page "done"}}<h1>{{.Title}}</h1><p>{{.Text}}</p>
{{else if eq .Page "login"}}<h1>Sign in to Mirobody</h1>
<p><b>{{.Client}}</b> wants to connect to your account.</p>
{{if .Error}}<p class="error">{{.Error}}</p>{{end}}
<form method="post" action="/oauth/login">
<input type="hidden" name="request" value="{{.Request}}"><input type="hidden" name="csrf" value="{{.CSRF}}">
<label for="email">Email</label><input id="email" type="email" name="email" value="{{.Email}}" autocomplete="username" required autofocus>
<label for="password">Password</label><input id="password" type="password" name="password" autocomplete="current-password" required>
<button class="primary" type="submit">Sign in</button>
</form>
{{else}}<h1>Allow access?</h1>
<p><b>{{.Client}}</b> {{if .Verified}}(from {{.ClientHost}}){{else}}<span class="muted">(name given by the app itself, not verified)</span>{{end}}
wants to:</p>
<ul>{{range .Scopes}}<li>{{.}}</li>{{end}}</ul>
<p class="muted">Signed in as {{.Email}}. After you decide, you go back to <b>{{.RedirectHost}}</b>.</p>
<form method="post" action="/oauth/consent">
<input type="hidden" name="request" value="{{.Request}}"><input type="hidden" name="csrf" value="{{.CSRF}}">
<button class="primary" type="submit" name="action" value="allow">Allow</button>
<button type="submit" name="action" value="deny">Deny</button>
</form>
{{end}}
</main></body></html>
`))

// render writes a page with headers that keep it out of caches and frames.
func render(c echo.Context, status int, d pageData) error {
	var buf bytes.Buffer
	if err := pages.Execute(&buf, d); err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	return c.HTMLBlob(status, buf.Bytes())
}

// errorPage shows an error that cannot go back to the client: its
// redirect URI is unknown or untrusted.
func errorPage(c echo.Context, status int, msg string) error {
	return render(c, status, pageData{Page: "error", Title: "Cannot continue", Error: msg})
}

// setCookie sets a page cookie: HttpOnly, SameSite=Lax (a cross-site form
// post carries none, which with the CSRF token stops forged consent), and
// Secure when the public URL is https.
func (o *Server) setCookie(c echo.Context, name, value string, ttl time.Duration) {
	c.SetCookie(&http.Cookie{Name: name, Value: value, Path: cookiePath, MaxAge: int(ttl.Seconds()),
		HttpOnly: true, Secure: o.secure, SameSite: http.SameSiteLaxMode})
}

// csrfToken returns the browser's CSRF token, setting one if it has none.
// Forms carry it back and must match the cookie (double submit).
func (o *Server) csrfToken(c echo.Context) string {
	if ck, err := c.Cookie(csrfCookie); err == nil && len(ck.Value) == 43 {
		return ck.Value
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	v := base64.RawURLEncoding.EncodeToString(b)
	o.setCookie(c, csrfCookie, v, loginTTL)
	return v
}

// csrfValid checks the form's token against the cookie.
func csrfValid(c echo.Context) bool {
	ck, err := c.Cookie(csrfCookie)
	form := c.FormValue("csrf")
	return err == nil && ck.Value != "" && subtle.ConstantTimeCompare([]byte(ck.Value), []byte(form)) == 1
}

// DonePage renders a page that ends a browser flow, a title and a line of
// text, with the headers of every OAuth page (no-store, no-referrer, the
// CSP). The callback of external servers' OAuth flows uses it too.
func DonePage(c echo.Context, status int, title, text string) error {
	return render(c, status, pageData{Page: "done", Title: title, Text: text})
}
