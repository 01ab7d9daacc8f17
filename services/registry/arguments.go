package registry

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Arguments is the check every tool call's arguments pass, wherever they
// enter: the gateway's /mcp, registry-svc (our tools and external ones
// alike) and the Python tool host. Nil or null means {}; anything else must
// be a JSON object in valid UTF-8. It returns the arguments to send on, or
// an invalid_argument error naming tool.
func Arguments(tool string, args json.RawMessage) (json.RawMessage, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		return json.RawMessage("{}"), nil
	}
	if args[0] != '{' || !json.Valid(args) {
		return nil, wire.Errorf(wire.InvalidArgument, "arguments of %s must be a JSON object", tool)
	}
	// JSON text is UTF-8 (RFC 8259), but encoding/json lets other bytes
	// through (as U+FFFD when decoded): a tool would see other text than
	// was sent, and Python none at all.
	if !utf8.Valid(args) {
		return nil, wire.Errorf(wire.InvalidArgument, "arguments of %s are not valid UTF-8", tool)
	}
	return args, nil
}
