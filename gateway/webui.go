package gateway

import (
	"embed"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// webFiles is the web app: plain ES modules and CSS with no build step, so
// the page works offline and the binary carries everything it serves.
//
//go:embed web
var webFiles embed.FS

// webCSP allows the page only its own scripts, styles and API: no inline
// script or style, no other origin, no framing. Model answers are shown
// as sanitized Markdown (js/markdown.js) and all other output as text; this
// policy backs that up if a bug ever lets markup through.
const webCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// webRoutes serves the web app under /app/ (with / redirecting there) and
// the API key endpoints the app manages keys with.
func (s *Service) webRoutes(e *echo.Echo, api *echo.Group) {
	files := echo.WrapHandler(http.StripPrefix("/app/", http.FileServerFS(echo.MustSubFS(webFiles, "web"))))
	toApp := func(c echo.Context) error { return c.Redirect(http.StatusFound, "/app/") }
	e.GET("/", toApp, webHeaders)
	e.GET("/app", toApp, webHeaders)
	e.GET("/app/*", func(c echo.Context) error {
		// Folders other than the app's root have no index page, and the
		// file server would list them instead.
		if p := c.Param("*"); p != "" && strings.HasSuffix(p, "/") {
			return echo.ErrNotFound
		}
		return files(c)
	}, webHeaders)
	s.keyRoutes(api)
}

// webHeaders sets the web app's security headers. The files change with
// each release and are small, so browsers revalidate instead of caching.
func webHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", webCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set(echo.HeaderCacheControl, "no-cache")
		return next(c)
	}
}
