package mcpserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mirobody/mirobody-go/services/registry"
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
// A full answer is the caller's encoded result, reused while its ETag holds
// (encodedLists).
func (m *Server) listToolsHTTP(w http.ResponseWriter, q *request, msg *rpcMessage) {
	resp, e := m.listRegistry(q.r.Context(), q, msg)
	if e != nil {
		writeRPCError(w, msg.ID, e)
		return
	}
	etag := listETag(resp.ETag, q)
	if etag != "" {
		w.Header().Set("ETag", etag)
		// Per account: no shared cache may keep it.
		w.Header().Set("Cache-Control", "private, no-cache")
		if noneMatchHits(q.r.Header.Get("If-None-Match"), etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	result, err := m.lists.get(q, etag, resp)
	if err != nil {
		m.Log.ErrorContext(q.r.Context(), "encoding the tool list failed", "err", err)
		writeRPCError(w, msg.ID, newRPCError(http.StatusInternalServerError, jsonrpc.CodeInternalError, "internal error"))
		return
	}
	// The id is a validated JSON string or integer and result is encoded
	// JSON: the answer is written around the cached bytes, neither encoded
	// again (json.Marshal's validation pass over hundreds of KB) nor copied
	// into one buffer (hundreds of KB of garbage per list, which made the
	// collector run every few dozen lists: design.md "List tail").
	head := make([]byte, 0, len(msg.ID)+32)
	head = append(head, `{"jsonrpc":"2.0","id":`...)
	head = append(head, msg.ID...)
	head = append(head, `,"result":`...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(head)+len(result)+len(listTail)))
	w.WriteHeader(http.StatusOK)
	for _, part := range [][]byte{head, result, listTail} {
		if _, err := w.Write(part); err != nil {
			return
		}
	}
}

// listTail closes a tools/list answer.
var listTail = []byte("}")

// maxEncodedLists bounds the encoded answers kept; when full the cache
// starts over, which costs one encoding per caller.
const maxEncodedLists = 4096

// encodedLists keeps, per caller (account, agent, era), the last tools/list
// result it was sent, encoded, under its ETag. Encoding a thousand tools
// (hundreds of KB) was most of an unchanged list's time and garbage; the
// ETag names everything the result depends on (the registry's answer,
// external servers included, and the caller), so an entry is reused only
// while its ETag is the caller's current one. A change event changes the
// registry's revision or the caller's ETag: a new revision empties the
// cache, a new ETag replaces the caller's entry.
type encodedLists struct {
	mu       sync.Mutex
	revision string
	byCaller map[listCaller]encodedList
}

// listCaller is what a tools/list result depends on besides the registry.
type listCaller struct {
	account, agent string
	modern, anon   bool
}

// encodedList is one encoded tools/list result and its ETag.
type encodedList struct {
	etag string
	body []byte
}

// get returns q's tools/list result for the registry answer resp, whose
// HTTP ETag is etag, encoded. Without an ETag it is encoded every time.
func (c *encodedLists) get(q *request, etag string, resp *registry.ListResponse) ([]byte, error) {
	if etag == "" {
		return encodeList(q, resp)
	}
	cl := q.caller()
	key := listCaller{account: cl.AccountID, agent: string(cl.Agent), modern: q.modern, anon: q.principal == nil}
	c.mu.Lock()
	if c.revision != resp.Revision || len(c.byCaller) >= maxEncodedLists {
		c.revision, c.byCaller = resp.Revision, map[listCaller]encodedList{}
	}
	hit, ok := c.byCaller[key]
	c.mu.Unlock()
	if ok && hit.etag == etag {
		return hit.body, nil
	}
	body, err := encodeList(q, resp)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.revision == resp.Revision {
		c.byCaller[key] = encodedList{etag: etag, body: body}
	}
	c.mu.Unlock()
	return body, nil
}

// encodeList encodes q's tools/list result.
func encodeList(q *request, resp *registry.ListResponse) ([]byte, error) {
	b, err := json.Marshal(listResultOf(q, resp))
	if err != nil {
		return nil, fmt.Errorf("encoding the tool list: %w", err)
	}
	return b, nil
}
