package gateway

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/mirobody/mirobody-go/services/vfs/accounts"
)

// me answers GET /api/me: the caller's account.
func (s *Service) me(c echo.Context) error {
	a, err := s.accounts.Get(c.Request().Context(), &accounts.AccountGetRequest{ID: principal(c).AccountID})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, a)
}
