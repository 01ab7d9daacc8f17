package gateway

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/vfs/audit"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	"github.com/mirobody/mirobody-go/services/wire"
)

func (s *Service) chatRoutes(api *echo.Group) {
	api.POST("/chat", s.chat)
	api.POST("/runs/:id/cancel", s.cancelRun)
	api.POST("/runs/:id/approve", s.approveRun)
	api.POST("/runs/:id/answer", s.answerRun)
	api.GET("/runs/:id/stream", s.streamRun)
	api.GET("/sessions", s.listSessions)
	api.GET("/sessions/:id", s.getSession)
	api.DELETE("/sessions/:id", s.deleteSession)
	api.PATCH("/sessions/:id", s.renameSession)
	api.GET("/audit", s.listAudit)
}

// listAudit answers GET /api/audit?limit=&before=: the caller's tool calls,
// newest first (vfs-svc/design.md "Audit log"). before is the id of the
// oldest record of the previous page.
func (s *Service) listAudit(c echo.Context) error {
	limit, err := positiveQuery(c, "limit")
	if err != nil {
		return err
	}
	before, err := positiveQuery(c, "before")
	if err != nil {
		return err
	}
	resp, err := audit.Query.Call(c.Request().Context(), s.node.Client, &audit.QueryRequest{
		AccountID: principal(c).AccountID, Limit: int(limit), Before: before})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resp)
}

// positiveQuery reads an optional positive integer query parameter; 0 when
// it is absent.
func positiveQuery(c echo.Context, name string) (int64, error) {
	v := c.QueryParam(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, wire.Errorf(wire.InvalidArgument, "%s must be a positive integer", name)
	}
	return n, nil
}

// listSessions answers GET /api/sessions?limit=&cursor=.
func (s *Service) listSessions(c echo.Context) error {
	limit, err := positiveQuery(c, "limit")
	if err != nil {
		return err
	}
	resp, err := sessions.NewSessions(s.node.Client).List(c.Request().Context(), &sessions.SessionListRequest{
		AccountID: principal(c).AccountID, Limit: int(limit), Cursor: c.QueryParam("cursor")})
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
