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
)

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
