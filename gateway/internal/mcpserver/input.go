package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
)

// A tool that asks its caller (elicitation, sampling, roots) stops with
// input requests and runs again with the answers (registry-svc/design.md
// "Elicitation and sampling"). In the modern era the answers come back in
// a new tools/call (SEP-2322, sealed requestState); in the legacy era the
// gateway asks the client on the call's SSE stream itself and calls the
// tool again (gateway/design.md "Elicitation and sampling").

// askableCapabilities are the client capabilities a tool may use, as
// registry.CallRequest names them.
var askableCapabilities = []string{"elicitation", "sampling", "roots"}

// Limits of the ask-and-rerun loop.
const (
	// maxInputRounds bounds the rounds of one legacy tools/call.
	maxInputRounds = 16
	// inputTimeout bounds how long a legacy call waits for the client's
	// answers (a person may be filling a form).
	inputTimeout = 10 * time.Minute
	// inputIDPrefix starts the ids of our requests to clients, so that a
	// client's response is told apart from anything else it posts.
	inputIDPrefix = "mirobody-input-"
	// subjectInputPrefix + the id's token carries a client's response to
	// the replica whose call waits for it.
	subjectInputPrefix = "events.gateway.input."
)

// capabilityNames returns the askable capabilities present in a
// ClientCapabilities object.
func capabilityNames(raw json.RawMessage) []string {
	var caps map[string]json.RawMessage
	if json.Unmarshal(raw, &caps) != nil {
		return nil
	}
	var out []string
	for _, c := range askableCapabilities {
		if v, ok := caps[c]; ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			out = append(out, c)
		}
	}
	return out
}

// clientCapabilities is what the request's client can answer for a tool:
// the modern era declares it on every request, the legacy era in
// initialize (kept in the session), and there only a client reading the
// call's SSE stream can be asked.
func clientCapabilities(q *request, meta map[string]json.RawMessage) []string {
	if q.modern {
		return capabilityNames(meta[mcp.MetaKeyClientCapabilities])
	}
	if q.session == nil || !q.sse {
		return nil
	}
	return q.session.Caps
}

// inputState is what a modern requestState carries: the answers of the
// rounds so far, bound to the account and the tool.
type inputState struct {
	Account string                     `json:"a,omitempty"`
	Tool    string                     `json:"t"`
	Issued  int64                      `json:"i"`
	Answers map[string]json.RawMessage `json:"r,omitempty"`
	// Pending are the keys of the input requests this state went out
	// with: registry.CallRequest.Replay of the next run.
	Pending []string `json:"p,omitempty"`
}

// adInputState keeps request states and session ids apart: neither opens
// as the other.
var adInputState = []byte("mcp-request-state")

// sealState returns the requestState for st, stamped now.
func (s *sealer) sealState(st inputState) string {
	st.Issued = s.now().Unix()
	plain, _ := json.Marshal(st)
	return base64.RawURLEncoding.EncodeToString(s.boxes[0].Seal(plain, adInputState))
}

// openState opens a requestState sealed for account and tool; anything
// else (tampered, expired, another account's or tool's) fails.
func (s *sealer) openState(raw, account, tool string) (*inputState, error) {
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil {
		return nil, errBadSession
	}
	for _, box := range s.boxes {
		plain, err := box.Open(b, adInputState)
		if err != nil {
			continue
		}
		var st inputState
		if json.Unmarshal(plain, &st) != nil || st.Account != account || st.Tool != tool ||
			s.now().Sub(time.Unix(st.Issued, 0)) > s.ttl {
			return nil, errBadSession
		}
		return &st, nil
	}
	return nil, errBadSession
}

// modernInputs returns the answers a modern tools/call carries (those of
// its sealed requestState plus its inputResponses, each an object) and
// the requests its state went out with.
func (m *Server) modernInputs(q *request, p *callParams) (map[string]json.RawMessage, []string, *rpcError) {
	answers := map[string]json.RawMessage{}
	var pending []string
	if len(p.RequestState) > 0 && !bytes.Equal(p.RequestState, []byte("null")) {
		account := ""
		if q.principal != nil {
			account = q.principal.AccountID
		}
		var state string
		if json.Unmarshal(p.RequestState, &state) != nil {
			return nil, nil, newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "invalid params: requestState must be a string")
		}
		st, err := m.sealer.openState(state, account, p.Name)
		if err != nil {
			return nil, nil, newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "invalid params: requestState does not verify")
		}
		for k, v := range st.Answers {
			answers[k] = v
		}
		pending = st.Pending
	}
	if p.InputResponses != nil {
		var in map[string]json.RawMessage
		if err := json.Unmarshal(p.InputResponses, &in); err != nil || in == nil {
			return nil, nil, newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "invalid params: inputResponses must be an object")
		}
		for k, v := range in {
			if v = bytes.TrimSpace(v); len(v) == 0 || v[0] != '{' {
				return nil, nil, newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "invalid params: inputResponses.%s must be an object", k)
			}
			answers[k] = v
		}
	}
	return answers, pending, nil
}

// inputRequiredResult is the modern era's InputRequiredResult.
type inputRequiredResult struct {
	ResultType    string                     `json:"resultType"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  string                     `json:"requestState"`
}

// inputRequired is the modern era's answer to a request whose tool (or
// prompt, name "prompt:<name>") asked: the requests, and the state that
// carries the answers so far to the next round.
func (m *Server) inputRequired(q *request, name string, answers, requests map[string]json.RawMessage) inputRequiredResult {
	account := ""
	if q.principal != nil {
		account = q.principal.AccountID
	}
	st := inputState{Account: account, Tool: name, Answers: answers, Pending: slices.Sorted(maps.Keys(requests))}
	return inputRequiredResult{ResultType: "input_required", InputRequests: requests, RequestState: m.sealer.sealState(st)}
}

// clientResponse is a client's JSON-RPC response to one of our requests,
// as it travels to the waiting replica.
type clientResponse struct {
	Account string          `json:"account,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *jsonrpc.Error  `json:"error,omitempty"`
}

// askClient sends the input requests on the legacy call's stream as
// server-to-client requests and waits for every answer, which may arrive
// at any replica (routeResponse). It returns the answers by key.
func (m *Server) askClient(ctx context.Context, q *request, out *replyStream, requests map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	tb := make([]byte, 16)
	_, _ = rand.Read(tb)
	token := hex.EncodeToString(tb)
	ch := make(chan *nats.Msg, len(requests)+8)
	sub, err := m.Conn.ChanSubscribe(subjectInputPrefix+token+".*", ch)
	if err != nil {
		return nil, fmt.Errorf("subscribing to client responses: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := m.Conn.Flush(); err != nil {
		return nil, fmt.Errorf("flushing the response subscription: %w", err)
	}
	keys := map[string]string{} // request index -> key
	i := 0
	for key, raw := range requests {
		var r struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(raw, &r) != nil || r.Method == "" {
			return nil, fmt.Errorf("input request %s has no method", key)
		}
		idx := fmt.Sprint(i)
		i++
		keys[idx] = key
		id, _ := json.Marshal(inputIDPrefix + token + "-" + idx)
		if err := out.send(rpcRequest{JSONRPC: "2.0", ID: id, Method: r.Method, Params: r.Params}); err != nil {
			return nil, fmt.Errorf("sending %s to the client: %w", r.Method, err)
		}
	}
	account := ""
	if q.principal != nil {
		account = q.principal.AccountID
	}
	ctx, cancel := context.WithTimeout(ctx, inputTimeout)
	defer cancel()
	answers := map[string]json.RawMessage{}
	for len(answers) < len(keys) {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the client's answers: %w", ctx.Err())
		case nm := <-ch:
			var cr clientResponse
			key, ok := keys[nm.Subject[strings.LastIndexByte(nm.Subject, '.')+1:]]
			if !ok || json.Unmarshal(nm.Data, &cr) != nil || cr.Account != account {
				continue
			}
			if cr.Error != nil {
				return nil, fmt.Errorf("the client refused request %s: %s", key, cr.Error.Message)
			}
			answers[key] = cr.Result
		}
	}
	return answers, nil
}

// routeResponse passes a client's response to one of our requests to the
// replica waiting for it; responses to anything else are dropped.
func (m *Server) routeResponse(q *request, msg *rpcMessage) {
	var id string
	if json.Unmarshal(msg.ID, &id) != nil || !strings.HasPrefix(id, inputIDPrefix) {
		return
	}
	token, idx, ok := strings.Cut(strings.TrimPrefix(id, inputIDPrefix), "-")
	if !ok || token == "" || idx == "" || strings.ContainsAny(token+idx, ".*> \t") {
		return
	}
	var body struct {
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	if json.Unmarshal(msg.Body, &body) != nil {
		return
	}
	cr := clientResponse{Result: body.Result, Error: body.Error}
	if q.principal != nil {
		cr.Account = q.principal.AccountID
	}
	b, _ := json.Marshal(cr)
	if err := m.Conn.Publish(subjectInputPrefix+token+"."+idx, b); err != nil {
		m.Log.WarnContext(q.r.Context(), "publishing a client response failed", "err", err)
	}
}

// missingCapability is the modern era's -32021 for a tool that needed a
// capability the client did not declare (SEP-2575): HTTP 400.
func missingCapability(capability string) *rpcError {
	return newRPCError(http.StatusBadRequest, mcp.CodeMissingRequiredClientCapabilities,
		"missing required client capability: %s", capability).
		withData(map[string]any{"requiredCapabilities": map[string]any{capability: map[string]any{}}})
}
