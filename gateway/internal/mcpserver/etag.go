package mcpserver

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
)

// listETag is the HTTP entity tag of a tools/list answer. The registry's
// ETag (regETag) already names the tool set, the visibility profile, the
// caller's data kinds and external tools; the account, the agent and the
// era are added because the answer's body depends on them too (cacheScope,
// the modern cache fields) and because a tag must never let one account's
// cached list stand for another's. Empty when the registry gave no ETag.
func listETag(regETag string, q *request) string {
	if regETag == "" {
		return ""
	}
	c := q.caller()
	era := "legacy"
	if q.modern {
		era = "modern"
	}
	sum := sha256.Sum256([]byte(regETag + "\x00" + c.AccountID + "\x00" + string(c.Agent) + "\x00" + era))
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

// noneMatchHits reports whether an If-None-Match header value names etag:
// "*" or a list of tags, compared weakly (RFC 9110 §13.1.2).
func noneMatchHits(header, etag string) bool {
	if header == "" || etag == "" {
		return false
	}
	for tag := range strings.SplitSeq(header, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
			return true
		}
	}
	return false
}

// listToolsHTTP answers a single tools/list POST with an ETag, and with 304
// Not Modified and no body when the client's If-None-Match names it: the
// client reuses the result it holds (only the JSON-RPC id would differ).
func (m *Server) listToolsHTTP(w http.ResponseWriter, q *request, msg *rpcMessage) {
	res, etag, e := m.listTools(q.r.Context(), q, msg)
	if e != nil {
		writeRPCError(w, msg.ID, e)
		return
	}
	if etag != "" {
		w.Header().Set("ETag", etag)
		// Per account: no shared cache may keep it.
		w.Header().Set("Cache-Control", "private, no-cache")
		if noneMatchHits(q.r.Header.Get("If-None-Match"), etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	writeJSON(w, http.StatusOK, rpcResponse{JSONRPC: "2.0", ID: msg.ID, Result: res})
}
