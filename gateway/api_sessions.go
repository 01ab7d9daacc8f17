package gateway

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	"github.com/mirobody/mirobody-go/services/wire"
)

func (s *Service) chatRoutes(api *echo.Group) {
	api.POST("/chat", s.chat)
	api.POST("/runs/:id/cancel", s.cancelRun)
	api.GET("/sessions", s.listSessions)
	api.GET("/sessions/:id", s.getSession)
	api.DELETE("/sessions/:id", s.deleteSession)
	api.PATCH("/sessions/:id", s.renameSession)
}

// listSessions answers GET /api/sessions?limit=&cursor=.
func (s *Service) listSessions(c echo.Context) error {
	limit := 0
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return wire.Errorf(wire.InvalidArgument, "limit must be a positive integer")
		}
		limit = n
	}
	resp, err := sessions.NewSessions(s.node.Client).List(c.Request().Context(), &sessions.SessionListRequest{
		AccountID: principal(c).AccountID, Limit: limit, Cursor: c.QueryParam("cursor")})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resp)
}

// getSession answers GET /api/sessions/{id}: the session and its turns.
func (s *Service) getSession(c echo.Context) error {
	resp, err := sessions.NewSessions(s.node.Client).Get(c.Request().Context(), &sessions.SessionGetRequest{
		AccountID: principal(c).AccountID, SessionID: c.Param("id")})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resp)
}

// deleteSession answers DELETE /api/sessions/{id}: the session, its VFS
// files and (on every agent replica) its REPL state.
func (s *Service) deleteSession(c echo.Context) error {
	p := principal(c)
	id := c.Param("id")
	resp, err := sessions.NewSessions(s.node.Client).Delete(c.Request().Context(), &sessions.SessionDeleteRequest{AccountID: p.AccountID, SessionID: id})
	if err != nil {
		return err
	}
	if err := agent.NewClient(s.node.Client).SessionDeleted(context.WithoutCancel(c.Request().Context()), &agent.SessionDeletedEvent{AccountID: p.AccountID, SessionID: id}); err != nil {
		s.log.Warn("announcing a deleted session failed", "err", err)
	}
	return c.JSON(http.StatusOK, resp)
}

// renameRequest is the body of PATCH /api/sessions/{id}.
type renameRequest struct {
	Title string `json:"title"`
}

// renameSession answers PATCH /api/sessions/{id} with {"title": "..."}:
// the renamed session.
func (s *Service) renameSession(c echo.Context) error {
	var body renameRequest
	if err := s.bindJSON(c, &body, `the body must be a JSON object {"title": "..."}`); err != nil {
		return err
	}
	resp, err := sessions.NewSessions(s.node.Client).Rename(c.Request().Context(), &sessions.SessionRenameRequest{
		AccountID: principal(c).AccountID, SessionID: c.Param("id"), Title: body.Title})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resp)
}
