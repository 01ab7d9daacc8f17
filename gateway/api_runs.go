package gateway

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/wire"
)

// cancelRunResponse is the body of a POST /api/runs/{id}/cancel answer.
type cancelRunResponse struct {
	RunID string `json:"run_id"`
}

// cancelRun answers POST /api/runs/{id}/cancel: the replica running the
// caller's run stops it, and the run saves its turn with finish cancelled
// (its stream, if anyone still reads it, ends the same way). The run id is
// the id of the chat stream's start event. Cancellation is announced to
// every agent replica, so the answer is 202 whether or not the run is
// still going; a run of another account is not touched.
func (s *Service) cancelRun(c echo.Context) error {
	id := c.Param("id")
	if _, err := uuid.Parse(id); err != nil {
		return wire.Errorf(wire.InvalidArgument, "run id %q is not a UUID", id)
	}
	err := agent.NewClient(s.node.Client).Cancel(c.Request().Context(), &agent.CancelEvent{RunID: id, AccountID: principal(c).AccountID, Reason: "the user stopped the run"})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, cancelRunResponse{RunID: id})
}
