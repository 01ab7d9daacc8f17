package gateway

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/mirobody/mirobody-go/services/wire"
)

// mapping is how one wire code shows up on each of the gateway's protocols.
type mapping struct {
	HTTP    int
	JSONRPC int
}

// codeTable is the one table mapping wire codes to HTTP and JSON-RPC
// (SPEC §0). MCP tool-level failures are results with isError, not errors.
var codeTable = map[wire.Code]mapping{
	wire.InvalidArgument:    {http.StatusBadRequest, -32602},
	wire.NotFound:           {http.StatusNotFound, -32602},
	wire.AlreadyExists:      {http.StatusConflict, -32603},
	wire.PermissionDenied:   {http.StatusForbidden, -32603},
	wire.Unauthenticated:    {http.StatusUnauthorized, -32603},
	wire.FailedPrecondition: {http.StatusPreconditionFailed, -32603},
	wire.ResourceExhausted:  {http.StatusTooManyRequests, -32603},
	wire.Unavailable:        {http.StatusServiceUnavailable, -32603},
	wire.DeadlineExceeded:   {http.StatusGatewayTimeout, -32603},
	wire.Internal:           {http.StatusInternalServerError, -32603},
	wire.IsDir:              {http.StatusBadRequest, -32602},
	wire.NotDir:             {http.StatusBadRequest, -32602},
	wire.NotEmpty:           {http.StatusConflict, -32602},
}

// tooLarge is how resource_exhausted shows when its reason is too_large: a
// payload over a size limit, not a rate over a budget. JSON-RPC has no
// code of its own for it; the payload is nearly always the caller's
// (arguments over the NATS max payload; an oversized tool result is a
// tool error, not an RPC error), hence invalid params.
var tooLarge = mapping{http.StatusRequestEntityTooLarge, -32602}

// mapCode returns the mapping for err's code.
func mapCode(err error) (wire.Code, mapping) {
	code := wire.CodeOf(err)
	m, ok := codeTable[code]
	if !ok {
		return wire.Internal, codeTable[wire.Internal]
	}
	if wire.IsTooLarge(err) {
		return code, tooLarge
	}
	return code, m
}

// apiError is the JSON body of a failed /api request.
type apiError struct {
	Error   string         `json:"error"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// httpError renders any handler error. Wire errors keep their code and
// message (they are written for callers); anything else is logged and
// shown only as internal.
func (s *Service) httpError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		msg, _ := he.Message.(string)
		if msg == "" {
			msg = http.StatusText(he.Code)
		}
		_ = c.JSON(he.Code, apiError{Error: http.StatusText(he.Code), Message: msg})
		return
	}
	var werr *wire.Error
	if !errors.As(err, &werr) || werr.Code == wire.Internal || !werr.Code.Valid() {
		// Internal errors are logged in full and shown as a kind only:
		// their text may name subjects, queries or hosts.
		s.log.ErrorContext(c.Request().Context(), "request failed", "path", c.Path(), "err", err)
		werr = &wire.Error{Code: wire.Internal, Message: "internal error"}
	}
	code, m := mapCode(werr)
	_ = c.JSON(m.HTTP, apiError{Error: string(code), Message: werr.Message, Details: werr.Details})
}
