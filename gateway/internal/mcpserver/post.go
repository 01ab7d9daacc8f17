package mcpserver

import (
	"encoding/json"
	"mime"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// post serves one POST: a JSON-RPC message, or a batch on 2025-03-26.
func (m *Server) post(w http.ResponseWriter, r *http.Request) {
	// An invalid token has been counted against the IP's budget already
	// (authn.Middleware, on every route).
	p, aerr := m.authenticate(r)
	if aerr != nil {
		writeRPCError(w, nullID, aerr)
		return
	}
	if lerr := m.admit(r, p); lerr != nil {
		writeRPCError(w, nullID, lerr)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			writeRPCError(w, nullID, newRPCError(http.StatusUnsupportedMediaType, jsonrpc.CodeInvalidRequest, "Content-Type must be application/json"))
			return
		}
	}
	body, rerr := m.readBody(w, r)
	if rerr != nil {
		writeRPCError(w, nullID, rerr)
		return
	}
	raws, batch, rerr := splitBody(body)
	if rerr != nil {
		writeRPCError(w, nullID, rerr)
		return
	}
	q := &request{r: r, principal: p, sse: acceptsSSE(r)}
	var single *rpcMessage
	if !batch {
		msg, id, perr := parseMessage(raws[0])
		if perr != nil {
			writeRPCError(w, id, perr)
			return
		}
		single = msg
	}
	if id, e := m.era(q, single); e != nil {
		writeRPCError(w, id, e)
		return
	}
	if q.terminated {
		id := nullID
		if single != nil && single.ID != nil {
			id = single.ID
		}
		writeRPCError(w, id, newRPCError(http.StatusNotFound, codeSessionNotFound, "session terminated: initialize again"))
		return
	}
	if batch {
		m.batch(w, q, raws)
		return
	}
	if single.Response {
		m.routeResponse(q, single)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if q.modern {
		if e := checkModern(r, single); e != nil {
			writeRPCError(w, single.ID, e)
			return
		}
		if e := m.checkParams(q, single); e != nil {
			writeRPCError(w, single.ID, e)
			return
		}
	}
	if single.notification() {
		m.notify(q, single)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if q.session == nil && q.sessionID != "" && !sessionTolerant(single.Method) {
		writeRPCError(w, single.ID, newRPCError(http.StatusNotFound, codeSessionNotFound, "session not found: initialize again"))
		return
	}
	if single.Method == "tools/call" {
		m.callTool(w, q, single)
		return
	}
	if single.Method == "subscriptions/listen" && q.modern {
		m.listen(w, q, single)
		return
	}
	if single.Method == "tools/list" {
		m.listToolsHTTP(w, q, single)
		return
	}
	res, e := m.dispatch(w, q, single)
	if e != nil {
		writeRPCError(w, single.ID, e)
		return
	}
	writeJSON(w, http.StatusOK, rpcResponse{JSONRPC: "2.0", ID: single.ID, Result: res})
}

// sessionTolerant lists the methods served even with an unknown session id,
// because the OpenAI and Anthropic connectors send stale or foreign ones.
func sessionTolerant(method string) bool {
	return method == "initialize" || method == "tools/list" || method == "tools/call"
}

// era tells the protocol era and version of the request (gateway/design.md
// "Eras and versions"): the MCP-Protocol-Version header, else the legacy
// session's version, else 2025-03-26. It also opens the legacy session id.
func (m *Server) era(q *request, msg *rpcMessage) (json.RawMessage, *rpcError) {
	id := nullID
	var metaVersion string
	if msg != nil {
		if msg.ID != nil {
			id = msg.ID
		}
		metaVersion = metaString(msg.meta, mcp.MetaKeyProtocolVersion)
	}
	hv := q.r.Header.Get(headerProtocolVersion)
	switch {
	case hv == "" && metaVersion != "":
		return id, newRPCError(http.StatusBadRequest, codeHeaderMismatch,
			"the %s header is required on requests carrying _meta %s", headerProtocolVersion, mcp.MetaKeyProtocolVersion)
	case hv != "" && !slices.Contains(supportedVersions, hv):
		return id, newRPCError(http.StatusBadRequest, codeUnsupportedProtocolVersion, "unsupported protocol version %q", hv).
			withData(mcp.UnsupportedProtocolVersionData{Supported: supportedVersions, Requested: hv})
	case hv == modernVersion:
		q.modern, q.version = true, modernVersion
		return id, nil
	case metaVersion != "" && metaVersion != hv:
		return id, newRPCError(http.StatusBadRequest, codeHeaderMismatch,
			"%s header %q does not match _meta %s %q", headerProtocolVersion, hv, mcp.MetaKeyProtocolVersion, metaVersion)
	}
	q.version = hv
	if sid := q.r.Header.Get(headerSessionID); sid != "" && (msg == nil || msg.Method != "initialize") {
		q.sessionID = sid
		account := ""
		if q.principal != nil {
			account = q.principal.AccountID
		}
		if s, err := m.sealer.open(sid, account); err == nil && m.revoked.Has(s.Nonce) {
			q.terminated = true
		} else if err == nil {
			q.session = s
			if q.version == "" {
				q.version = s.Version
			}
		}
	}
	if q.version == "" {
		q.version = defaultVersion
	}
	return id, nil
}

// checkModern applies the per-request rules of 2026-07-28: the _meta triple
// and the Mcp-Method / Mcp-Name headers mirrored from the body.
func checkModern(r *http.Request, msg *rpcMessage) *rpcError {
	if msg.notification() {
		return nil
	}
	meta := msg.meta
	pv := metaString(meta, mcp.MetaKeyProtocolVersion)
	if pv == "" {
		return newRPCError(http.StatusBadRequest, jsonrpc.CodeInvalidParams, "invalid params: _meta %s is required", mcp.MetaKeyProtocolVersion)
	}
	if pv != modernVersion {
		return newRPCError(http.StatusBadRequest, codeHeaderMismatch, "%s header %q does not match _meta %s %q",
			headerProtocolVersion, modernVersion, mcp.MetaKeyProtocolVersion, pv)
	}
	if _, ok := meta[mcp.MetaKeyClientCapabilities]; !ok {
		return newRPCError(http.StatusBadRequest, jsonrpc.CodeInvalidParams, "invalid params: _meta %s is required", mcp.MetaKeyClientCapabilities)
	}
	hm := r.Header.Get(headerMethod)
	if hm != msg.Method {
		return newRPCError(http.StatusBadRequest, codeHeaderMismatch, "%s header %q does not match method %q", headerMethod, hm, msg.Method)
	}
	switch msg.Method {
	case "tools/call":
		if hn := r.Header.Get(headerName); hn != msg.call.Name {
			return newRPCError(http.StatusBadRequest, codeHeaderMismatch, "%s header %q does not match tool name %q", headerName, hn, msg.call.Name)
		}
	case "tasks/get", "tasks/update", "tasks/cancel": // SEP-2663 "Routing Headers"
		var p struct {
			TaskID string `json:"taskId"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		if hn := r.Header.Get(headerName); hn != p.TaskID {
			return newRPCError(http.StatusBadRequest, codeHeaderMismatch, "%s header %q does not match taskId %q", headerName, hn, p.TaskID)
		}
	}
	return nil
}

// batch serves a JSON-RPC batch, allowed only on 2025-03-26 (and older);
// its calls get plain JSON replies, without progress.
func (m *Server) batch(w http.ResponseWriter, q *request, raws []json.RawMessage) {
	if q.modern || q.version >= "2025-06-18" {
		writeRPCError(w, nullID, newRPCError(http.StatusBadRequest, jsonrpc.CodeInvalidRequest,
			"invalid request: JSON-RPC batches are not supported in protocol version %s", q.version))
		return
	}
	var out []rpcResponse
	for _, raw := range raws {
		msg, id, perr := parseMessage(raw)
		switch {
		case perr != nil:
			out = append(out, rpcResponse{JSONRPC: "2.0", ID: id, Error: perr.Err})
		case msg.Response:
			m.routeResponse(q, msg)
		case msg.notification():
			m.notify(q, msg)
		case msg.Method == "tools/call":
			res, e := m.call(q.r.Context(), q, msg, nil)
			out = append(out, response(msg.ID, res, e))
		default:
			res, e := m.dispatch(w, q, msg)
			out = append(out, response(msg.ID, res, e))
		}
	}
	if len(out) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// response builds the reply to id from a result or an error.
func response(id json.RawMessage, res any, e *rpcError) rpcResponse {
	if e != nil {
		return rpcResponse{JSONRPC: "2.0", ID: id, Error: e.Err}
	}
	return rpcResponse{JSONRPC: "2.0", ID: id, Result: res}
}

// checkParams applies SEP-2243 to a modern tools/call: arguments whose
// schema carries x-mcp-header must be mirrored in Mcp-Param headers.
func (m *Server) checkParams(q *request, msg *rpcMessage) *rpcError {
	if msg.Method != "tools/call" {
		return nil
	}
	p := &msg.call
	if msg.callErr != nil || p.Name == "" {
		return nil
	}
	b, err := m.params.bindings(q.r.Context(), m.registry, p.Name)
	if err != nil {
		return m.registryError(q.r.Context(), err)
	}
	if err := checkParamHeaders(q.r.Header, p.Arguments, b); err != nil {
		return newRPCError(http.StatusBadRequest, codeHeaderMismatch, "header mismatch: %v", err)
	}
	return nil
}
