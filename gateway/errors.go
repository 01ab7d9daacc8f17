package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/mirobody/mirobody-go/services/wire"

	"github.com/mirobody/mirobody-go/gateway/internal/httpobs"
)

// mapping is how one wire code shows up on each of the gateway's protocols.
type mapping struct {
	HTTP    int
	JSONRPC int
}

// codeTable is the one table mapping wire codes to HTTP and JSON-RPC
// (services/wire/design.md "Error codes"). MCP tool-level failures are results
// with isError, not errors.
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

// retryAfterUnavailable is the Retry-After (seconds) of every 503: an
// outage behind the gateway (a service restarting, the database failing
// over) usually heals within seconds.
const retryAfterUnavailable = "5"

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
	// RequestID is the request's trace id (also in X-Request-Id), to quote
	// when reporting the failure.
	RequestID string `json:"request_id,omitempty"`
}

// httpError renders any handler error.
func (s *Service) httpError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	s.writeAPIError(c.Response(), c.Request(), c.Path(), err)
}

// writeAPIError writes err as an apiError body. Wire errors keep their code
// and message (they are written for callers); anything else is logged and
// shown only as internal.
func (s *Service) writeAPIError(w http.ResponseWriter, r *http.Request, route string, err error) {
	status, body := http.StatusInternalServerError, apiError{}
	var he *echo.HTTPError
	var werr *wire.Error
	switch {
	case errors.As(err, &he):
		msg, _ := he.Message.(string)
		if msg == "" {
			msg = http.StatusText(he.Code)
		}
		status, body = he.Code, apiError{Error: http.StatusText(he.Code), Message: msg}
	default:
		if !errors.As(err, &werr) || werr.Code == wire.Internal || !werr.Code.Valid() {
			// Internal errors are logged in full and shown as a kind only:
			// their text may name subjects, queries or hosts.
			s.log.ErrorContext(r.Context(), "request failed", "path", route, "err", err)
			werr = &wire.Error{Code: wire.Internal, Message: "internal error"}
		}
		code, m := mapCode(werr)
		status, body = m.HTTP, apiError{Error: string(code), Message: werr.Message, Details: werr.Details}
		if code == wire.Unavailable {
			w.Header().Set("Retry-After", retryAfterUnavailable)
		}
	}
	body.RequestID = httpobs.TraceID(r)
	w.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// bindJSON decodes a JSON request body of at most MAX_REQUEST_BYTES into
// v and checks its text with checkJSONText. A body that does not decode is
// invalid_argument with usage (what the body must look like); over the
// limit is too_large (413).
func (s *Service) bindJSON(c echo.Context, v any, usage string) error {
	raw, err := readJSONBody(c.Response(), c.Request(), int64(s.opts.Config.MaxRequestBytes), "MAX_REQUEST_BYTES")
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return wire.Errorf(wire.InvalidArgument, "%s", usage)
	}
	return checkJSONText(raw)
}

// readJSONBody reads a request body of at most limit bytes (the caller
// names the key that sets it). Over the limit is too_large (413).
func readJSONBody(w http.ResponseWriter, r *http.Request, limit int64, key string) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		e := wire.TooLarge("request body", 0, mbe.Limit)
		e.Message += " (" + key + ")"
		return nil, e
	}
	if err != nil {
		return nil, wire.Errorf(wire.InvalidArgument, "reading the body failed")
	}
	return body, nil
}

// checkJSONText reports text in a JSON document that no service can keep:
// invalid UTF-8, NUL (\u0000, which Postgres text and jsonb refuse), or a
// UTF-16 surrogate escape without its pair (\ud800 alone). encoding/json
// would quietly turn the last two kinds into U+FFFD or a NUL byte, so the
// raw document is checked; doc must already be known to be valid JSON.
func checkJSONText(doc []byte) error {
	if !utf8.Valid(doc) {
		return wire.Errorf(wire.InvalidArgument, "the body is not valid UTF-8")
	}
	// In valid JSON a backslash only ever starts an escape inside a
	// string, so every one can be read as such.
	for i := 0; i < len(doc); i++ {
		if doc[i] != '\\' {
			continue
		}
		i++
		if doc[i] != 'u' {
			continue
		}
		r := hex4(doc[i+1:])
		i += 4
		switch {
		case r == 0:
			return wire.Errorf(wire.InvalidArgument, `the body contains a NUL character (\u0000), which text cannot hold`)
		case r >= 0xD800 && r < 0xDC00:
			if i+6 < len(doc) && doc[i+1] == '\\' && doc[i+2] == 'u' {
				if lo := hex4(doc[i+3:]); lo >= 0xDC00 && lo < 0xE000 {
					i += 6
					continue
				}
			}
			fallthrough
		case r >= 0xDC00 && r < 0xE000:
			return wire.Errorf(wire.InvalidArgument, `the body contains an unpaired UTF-16 surrogate (\u%04x), which is not a character`, r)
		}
	}
	return nil
}

// hex4 decodes the four hex digits at the start of b (a \u escape of
// valid JSON), or -1.
func hex4(b []byte) int {
	if len(b) < 4 {
		return -1
	}
	v, err := strconv.ParseUint(string(b[:4]), 16, 16)
	if err != nil {
		return -1
	}
	return int(v)
}
