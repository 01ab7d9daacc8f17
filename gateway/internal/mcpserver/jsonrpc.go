package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// JSON-RPC error codes used by /mcp beyond the standard ones in the SDK's
// jsonrpc package. The modern-era codes are the SDK's (SEP-2575).
const (
	codeSessionNotFound            = -32001
	codeHeaderMismatch             = mcp.CodeHeaderMismatch
	codeUnsupportedProtocolVersion = mcp.CodeUnsupportedProtocolVersion
)

// nullID is the id of an error response to a message whose id is unknown.
var nullID = json.RawMessage("null")

// rpcMessage is one incoming JSON-RPC message. A nil ID is a notification;
// a message with a result or error and no method is a response to a
// server-to-client request of a legacy call (routeResponse).
type rpcMessage struct {
	ID       json.RawMessage
	Method   string
	Params   json.RawMessage
	Response bool
	// Body is the whole message of a Response.
	Body json.RawMessage
	// call is Params decoded once (parseMessage) for every step that reads
	// it: era, checkModern, checkParams, progressToken and call. callErr is
	// the decoding error, if any; meta is call.Meta as a map, nil when
	// absent or not an object.
	call    callParams
	callErr error
	meta    map[string]json.RawMessage
}

// notification reports whether m expects no reply.
func (m *rpcMessage) notification() bool { return m.ID == nil }

// rpcResponse is an outgoing JSON-RPC response.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *jsonrpc.Error  `json:"error,omitempty"`
}

// rpcNotification is an outgoing JSON-RPC notification.
type rpcNotification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// rpcError is a JSON-RPC error together with the HTTP status it travels
// with. Most errors are HTTP 200; the transport rules of gateway/design.md "Eras and versions"
// and "Auth on /mcp" give some of them a 4xx.
type rpcError struct {
	Status int
	Err    *jsonrpc.Error
	// Header is set on the HTTP response (WWW-Authenticate, Retry-After).
	Header map[string]string
}

func (e *rpcError) Error() string { return e.Err.Message }

// newRPCError builds an rpcError with a formatted message.
func newRPCError(status int, code int64, format string, args ...any) *rpcError {
	return &rpcError{Status: status, Err: &jsonrpc.Error{Code: code, Message: fmt.Sprintf(format, args...)}}
}

// withData returns e carrying data, marshalled.
func (e *rpcError) withData(data any) *rpcError {
	b, err := json.Marshal(data)
	if err == nil {
		e.Err.Data = b
	}
	return e
}

// splitBody classifies a POST body: one message, or a batch of them. A body
// that is not JSON is a parse error; JSON that is neither an object nor a
// non-empty array is an invalid request.
func splitBody(body []byte) (msgs []json.RawMessage, batch bool, rerr *rpcError) {
	body = bytes.TrimSpace(body)
	// A single message is validated by parseMessage's one decode (a syntax
	// error there is a parse error too): scanning it here first would read
	// every tools/call twice.
	if len(body) > 0 && body[0] == '{' {
		return []json.RawMessage{body}, false, nil
	}
	if !json.Valid(body) {
		return nil, false, errParse()
	}
	switch body[0] {
	case '[':
		if err := json.Unmarshal(body, &msgs); err != nil || len(msgs) == 0 {
			return nil, true, newRPCError(400, jsonrpc.CodeInvalidRequest, "invalid request: an empty batch")
		}
		return msgs, true, nil
	}
	return nil, false, newRPCError(400, jsonrpc.CodeInvalidRequest, "invalid request: the body must be a JSON-RPC object")
}

// errParse is the answer to a body that is not JSON.
func errParse() *rpcError {
	return newRPCError(400, jsonrpc.CodeParseError, "parse error: the body is not valid JSON")
}

// parseMessage validates one JSON-RPC message. On failure it returns the id
// to answer with (null when the id itself is unusable).
func parseMessage(raw json.RawMessage) (*rpcMessage, json.RawMessage, *rpcError) {
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, nullID, newRPCError(400, jsonrpc.CodeInvalidRequest, "invalid request: a JSON-RPC message must be an object")
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		if _, ok := errors.AsType[*json.SyntaxError](err); ok {
			return nil, nullID, errParse()
		}
		return nil, nullID, newRPCError(400, jsonrpc.CodeInvalidRequest, "invalid request: %v", err)
	}
	id := m.ID
	if id != nil && !validID(id) {
		return nil, nullID, newRPCError(400, jsonrpc.CodeInvalidRequest, "invalid request: id must be a string or an integer")
	}
	replyID := id
	if replyID == nil {
		replyID = nullID
	}
	if m.JSONRPC != "2.0" {
		return nil, replyID, newRPCError(400, jsonrpc.CodeInvalidRequest, `invalid request: jsonrpc must be "2.0"`)
	}
	if m.Method == nil {
		if id != nil && (m.Result != nil || m.Error != nil) {
			return &rpcMessage{ID: id, Response: true, Body: raw}, nil, nil
		}
		return nil, replyID, newRPCError(400, jsonrpc.CodeInvalidRequest, "invalid request: method is missing")
	}
	if *m.Method == "" {
		return nil, replyID, newRPCError(400, jsonrpc.CodeInvalidRequest, "invalid request: method is empty")
	}
	p := bytes.TrimSpace(m.Params)
	if len(p) > 0 && !bytes.Equal(p, []byte("null")) && p[0] != '{' {
		return nil, replyID, newRPCError(200, jsonrpc.CodeInvalidParams, "invalid params: params must be an object")
	}
	if bytes.Equal(p, []byte("null")) {
		p = nil
	}
	msg := &rpcMessage{ID: id, Method: *m.Method, Params: p}
	if len(p) > 0 {
		// encoding/json keeps decoding past a field of the wrong type, so
		// _meta is read even when name is not a string, as each step's
		// own decode used to.
		msg.callErr = json.Unmarshal(p, &msg.call)
		msg.meta = metaMap(msg.call.Meta)
	}
	return msg, nil, nil
}

// validID reports whether raw, a JSON value, is a string or an integer
// (MCP forbids null ids and JSON-RPC discourages fractions).
func validID(raw json.RawMessage) bool {
	if len(raw) > 0 && raw[0] == '"' {
		return true
	}
	_, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil
}

// metaMap returns a _meta value as a map, nil when absent or not an object.
func metaMap(raw json.RawMessage) map[string]json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(raw, &meta) != nil {
		return nil
	}
	return meta
}

// metaString returns the string at key in meta, or "".
func metaString(meta map[string]json.RawMessage, key string) string {
	var s string
	if raw, ok := meta[key]; ok {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

// rpcRequest is an outgoing JSON-RPC request: a server-to-client request
// on a legacy call's stream (askClient).
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}
