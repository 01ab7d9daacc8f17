package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
)

const (
	initBody  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	listBody  = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	whoami    = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
	challenge = `Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp", scope="mcp"`
)

// TestTransportStatusCodes covers every status code, header and JSON-RPC
// error of gateway/design.md "Eras and versions" and "Auth on /mcp".
func TestTransportStatusCodes(t *testing.T) {
	f := startFakes(t)
	url := startGateway(t, testConfig(t, f.url))
	tests := []struct {
		name       string
		method     string
		url        string
		body       string
		hdr        []string
		status     int
		code       int64  // JSON-RPC error code, 0 for none
		id         string // expected id of the reply ("" not checked)
		wantHeader [2]string
		resultHas  string
	}{
		{name: "parse error has id null", body: `{"jsonrpc":`, status: 400, code: -32700, id: "null"},
		{name: "number body", body: `42`, status: 400, code: -32600, id: "null"},
		{name: "string body", body: `"tools/list"`, status: 400, code: -32600, id: "null"},
		{name: "empty batch", body: `[]`, status: 400, code: -32600, id: "null"},
		{name: "batch rejected on 2025-06-18", body: "[" + listBody + "]", hdr: []string{headerProtocolVersion, "2025-06-18"}, status: 400, code: -32600},
		{name: "batch rejected on 2025-11-25", body: "[" + listBody + "]", hdr: []string{headerProtocolVersion, "2025-11-25"}, status: 400, code: -32600},
		{name: "notification is 202", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, status: 202},
		{name: "client response is 202", body: `{"jsonrpc":"2.0","id":7,"result":{}}`, status: 202},
		{name: "missing jsonrpc", body: `{"id":1,"method":"ping"}`, status: 400, code: -32600, id: "1"},
		{name: "null id", body: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, status: 400, code: -32600, id: "null"},
		{name: "array params", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[]}`, status: 200, code: -32602},
		{name: "unknown method", body: `{"jsonrpc":"2.0","id":"a","method":"nope/nope"}`, status: 200, code: -32601, id: `"a"`},
		{name: "anonymous resource templates", body: `{"jsonrpc":"2.0","id":1,"method":"resources/templates/list"}`, status: 200, resultHas: `"resourceTemplates":[]`},
		{name: "anonymous read of a user file is 401", body: `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"vfs:///memories/a.md"}}`, status: 401},
		{name: "unknown resource scheme", body: `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}`, status: 200, code: -32602},
		{name: "prompt without a name", body: `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{}}`, status: 200, code: -32602},
		{name: "prompt with an unknown argument", body: `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"x","arguments":{"topic":"y"}}}`, status: 200, code: -32602},
		{name: "ping", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, status: 200, resultHas: `{}`},
		{name: "set log level", body: `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"info"}}`, status: 200, resultHas: `{}`},
		{name: "set an unknown log level", body: `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"loud"}}`, status: 200, code: -32602},
		{name: "a response to a request we never sent", body: `{"jsonrpc":"2.0","id":"mirobody-input-x-0","result":{"action":"accept"}}`, status: 202},
		{name: "bad origin is 403", body: listBody, hdr: []string{"Origin", "https://evil.example"}, status: 403},
		{name: "listed origin", body: listBody, hdr: []string{"Origin", "https://app.example"}, status: 200},
		{name: "own origin", body: listBody, hdr: []string{"Origin", "https://mcp.example"}, status: 200},
		{name: "DNS rebinding is 403", body: listBody, hdr: []string{"Origin", "http://evil.example", "Host", "evil.example"}, status: 403},
		{name: "same-origin loopback", body: listBody, hdr: []string{"Origin", "http://" + strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")}, status: 200},
		{name: "loopback origin of another port", body: listBody, hdr: []string{"Origin", "http://127.0.0.1:1"}, status: 403},
		{name: "unsupported version", body: listBody, hdr: []string{headerProtocolVersion, "1999-01-01"}, status: 400, code: -32022},
		{name: "unknown session tolerated on tools/list", body: listBody, hdr: []string{headerSessionID, "bogus"}, status: 200, resultHas: `"echo"`},
		{name: "unknown session tolerated on tools/call", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`, hdr: []string{headerSessionID, "bogus"}, status: 200, resultHas: `"hi"`},
		{name: "unknown session on ping is 404", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, hdr: []string{headerSessionID, "bogus"}, status: 404, code: codeSessionNotFound},
		{name: "body too large", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 70<<10) + `"}}`, status: 413},
		{name: "wrong content type", body: listBody, hdr: []string{"Content-Type", "text/plain"}, status: 415},
		{name: "PUT not allowed", method: http.MethodPut, body: listBody, status: 405, wantHeader: [2]string{"Allow", "GET, POST, DELETE, OPTIONS"}},
		{name: "CORS preflight", method: http.MethodOptions, hdr: []string{"Origin", "https://app.example", "Access-Control-Request-Headers", "authorization, mcp-session-id"}, status: 204,
			wantHeader: [2]string{"Access-Control-Allow-Headers", "authorization, mcp-session-id"}},
		{name: "CORS preflight of another origin", method: http.MethodOptions, hdr: []string{"Origin", "https://evil.example"}, status: 403},
		{name: "CORS exposes the session id", body: listBody, hdr: []string{"Origin", "https://app.example"}, status: 200,
			wantHeader: [2]string{"Access-Control-Expose-Headers", "Mcp-Session-Id, WWW-Authenticate, Retry-After, ETag, traceparent, X-Request-Id"}},
		{name: "DELETE without session", method: http.MethodDelete, status: 400},
		{name: "DELETE unknown session", method: http.MethodDelete, hdr: []string{headerSessionID, "bogus"}, status: 404},
		{name: "GET without SSE accept", method: http.MethodGet, hdr: []string{"Accept", "application/json"}, status: 406},
		{name: "modern GET is 405", method: http.MethodGet, hdr: []string{headerProtocolVersion, modernVersion}, status: 405},
		{name: "unknown tool", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}}`, status: 200, code: -32602},
		{name: "tool call without name", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`, status: 200, code: -32602},
		{name: "tool arguments not UTF-8", body: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"\xff\"}}}", status: 200, code: -32602},
		// SEP-1303: validation errors are tool results from 2025-11-25 on;
		// an unknown tool stays a protocol error.
		{name: "tool arguments not UTF-8 on 2025-11-25", body: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"\xff\"}}}", hdr: []string{headerProtocolVersion, "2025-11-25"}, status: 200, resultHas: `"isError":true`},
		{name: "tool arguments not an object on 2025-11-25", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":[1]}}`, hdr: []string{headerProtocolVersion, "2025-11-25"}, status: 200, resultHas: `must be a JSON object`},
		{name: "tool arguments not an object on 2025-06-18", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":[1]}}`, hdr: []string{headerProtocolVersion, "2025-06-18"}, status: 200, code: -32602},
		{name: "unknown tool on 2025-11-25", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}}`, hdr: []string{headerProtocolVersion, "2025-11-25"}, status: 200, code: -32602},
		{name: "unknown cursor", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"x"}}`, status: 200, code: -32602},

		// Auth (gateway/design.md "Auth on /mcp").
		{name: "anonymous list", body: listBody, status: 200, resultHas: `"echo"`},
		{name: "anonymous call of a user tool is 401", body: whoami, status: 401, wantHeader: [2]string{"WWW-Authenticate", challenge}},
		{name: "invalid token is 401", body: listBody, hdr: []string{"Authorization", "Bearer mb_nope"}, status: 401, wantHeader: [2]string{"WWW-Authenticate", challenge}},
		{name: "non-key token is 401", body: whoami, hdr: []string{"Authorization", "Bearer eyJhbGciOi"}, status: 401, wantHeader: [2]string{"WWW-Authenticate", challenge}},
		{name: "token without mcp scope is 403", body: whoami, hdr: []string{"Authorization", "Bearer " + keyNoScope}, status: 403,
			wantHeader: [2]string{"WWW-Authenticate", `Bearer error="insufficient_scope", resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp", scope="mcp"`}},
		{name: "signed-in call", body: whoami, hdr: []string{"Authorization", "Bearer " + keyGood}, status: 200, resultHas: acctGood},
		{name: "token in query string is ignored", url: url + "?access_token=" + keyGood, body: whoami, status: 401},

		// Modern era (2026-07-28).
		{name: "modern discover", body: `{"jsonrpc":"2.0","id":5,"method":"server/discover","params":{` + modernMeta + `}}`, hdr: modernHeaders("server/discover", ""), status: 200, resultHas: `"supportedVersions"`},
		{name: "modern missing meta", body: `{"jsonrpc":"2.0","id":5,"method":"server/discover","params":{}}`, hdr: modernHeaders("server/discover", ""), status: 400, code: -32602, id: "5"},
		{name: "modern meta version mismatch", body: `{"jsonrpc":"2.0","id":5,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v9","io.modelcontextprotocol/clientCapabilities":{}}}}`, hdr: modernHeaders("server/discover", ""), status: 400, code: -32020},
		{name: "modern unsupported version", body: `{"jsonrpc":"2.0","id":5,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v9"}}}`, hdr: []string{headerProtocolVersion, "v9", headerMethod, "server/discover"}, status: 400, code: -32022},
		{name: "meta version without header", body: `{"jsonrpc":"2.0","id":5,"method":"server/discover","params":{` + modernMeta + `}}`, status: 400, code: -32020},
		{name: "modern method header mismatch", body: `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{` + modernMeta + `}}`, hdr: modernHeaders("server/discover", ""), status: 400, code: -32020},
		{name: "modern name header mismatch", body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo",` + modernMeta + `}}`, hdr: modernHeaders("tools/call", "other"), status: 400, code: -32020},
		{name: "modern initialize removed", body: `{"jsonrpc":"2.0","id":5,"method":"initialize","params":{` + modernMeta + `}}`, hdr: modernHeaders("initialize", ""), status: 404, code: -32601},
		{name: "modern ping removed", body: `{"jsonrpc":"2.0","id":5,"method":"ping","params":{` + modernMeta + `}}`, hdr: modernHeaders("ping", ""), status: 404, code: -32601},
		{name: "modern setLevel removed", body: `{"jsonrpc":"2.0","id":5,"method":"logging/setLevel","params":{"level":"info",` + modernMeta + `}}`, hdr: modernHeaders("logging/setLevel", ""), status: 404, code: -32601},
		{name: "modern unknown method", body: `{"jsonrpc":"2.0","id":5,"method":"x/y","params":{` + modernMeta + `}}`, hdr: modernHeaders("x/y", ""), status: 404, code: -32601},
		{name: "modern batch", body: `[{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{` + modernMeta + `}}]`, hdr: modernHeaders("tools/list", ""), status: 400, code: -32600},
		{name: "modern anonymous list is public", body: `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{` + modernMeta + `}}`, hdr: modernHeaders("tools/list", ""), status: 200, resultHas: `"cacheScope":"public"`},
		{name: "modern account list is private", body: `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{` + modernMeta + `}}`, hdr: append(modernHeaders("tools/list", ""), "Authorization", "Bearer "+keyGood), status: 200, resultHas: `"cacheScope":"private"`},
		{name: "modern param header", body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"regional","arguments":{"region":"Hello"},` + modernMeta + `}}`, hdr: append(modernHeaders("tools/call", "regional"), "Mcp-Param-Region", "Hello"), status: 200},
		{name: "modern param header base64", body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"regional","arguments":{"region":"Hello"},` + modernMeta + `}}`, hdr: append(modernHeaders("tools/call", "regional"), "Mcp-Param-Region", "=?base64?SGVsbG8=?="), status: 200},
		{name: "modern param header missing", body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"regional","arguments":{"region":"Hello"},` + modernMeta + `}}`, hdr: modernHeaders("tools/call", "regional"), status: 400, code: -32020},
		{name: "modern param header mismatch", body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"regional","arguments":{"region":"Hello"},` + modernMeta + `}}`, hdr: append(modernHeaders("tools/call", "regional"), "Mcp-Param-Region", "Bye"), status: 400, code: -32020},
		{name: "modern param header bad base64", body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"regional","arguments":{"region":"Hello"},` + modernMeta + `}}`, hdr: append(modernHeaders("tools/call", "regional"), "Mcp-Param-Region", "=?base64?SGVsbG8?="), status: 400, code: -32020},
		{name: "modern param header for absent argument", body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"regional","arguments":{},` + modernMeta + `}}`, hdr: append(modernHeaders("tools/call", "regional"), "Mcp-Param-Region", "x"), status: 400, code: -32020},
		{name: "modern invalid arguments are a tool result", body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":[1],` + modernMeta + `}}`, hdr: modernHeaders("tools/call", "echo"), status: 200, resultHas: `"isError":true`},
		{name: "modern call", body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"yo"},` + modernMeta + `}}`, hdr: modernHeaders("tools/call", "echo"), status: 200, resultHas: `"resultType":"complete"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			method, u := tc.method, tc.url
			if method == "" {
				method = http.MethodPost
			}
			if u == "" {
				u = url
			}
			resp, body := send(t, method, u, tc.body, tc.hdr...)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tc.status, body)
			}
			if tc.wantHeader[0] != "" && resp.Header.Get(tc.wantHeader[0]) != tc.wantHeader[1] {
				t.Errorf("%s = %q, want %q", tc.wantHeader[0], resp.Header.Get(tc.wantHeader[0]), tc.wantHeader[1])
			}
			if tc.status == 202 || tc.status == 204 {
				if len(body) != 0 {
					t.Errorf("body %q, want none", body)
				}
				return
			}
			r := decode(t, body)
			if tc.code != 0 {
				if r.Error == nil || r.Error.Code != tc.code {
					t.Fatalf("reply %s, want error code %d", body, tc.code)
				}
			}
			if tc.id != "" && string(r.ID) != tc.id {
				t.Errorf("id %s, want %s", r.ID, tc.id)
			}
			if tc.resultHas != "" && !strings.Contains(string(r.Result), tc.resultHas) {
				t.Errorf("result %s lacks %s", r.Result, tc.resultHas)
			}
		})
	}
}

// wantCapabilities is what /mcp advertises (design.md "Capabilities").
const wantCapabilities = `{"completions":{},"logging":{},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"tools":{"listChanged":true}}`

func TestInitializeNegotiatesAndSeals(t *testing.T) {
	f := startFakes(t)
	url := startGateway(t, testConfig(t, f.url))
	for _, tc := range []struct{ asked, want string }{
		{"2025-03-26", "2025-03-26"}, {"2025-06-18", "2025-06-18"}, {"2025-11-25", "2025-11-25"},
		{"2026-07-28", "2025-11-25"}, {"1999-01-01", "2025-11-25"},
	} {
		body := strings.Replace(initBody, "2025-06-18", tc.asked, 1)
		resp, b := post(t, url, body)
		if resp.StatusCode != 200 {
			t.Fatalf("initialize %s: %d %s", tc.asked, resp.StatusCode, b)
		}
		var res struct {
			ProtocolVersion string                     `json:"protocolVersion"`
			Capabilities    map[string]json.RawMessage `json:"capabilities"`
		}
		must(t, json.Unmarshal(decode(t, b).Result, &res))
		if res.ProtocolVersion != tc.want {
			t.Errorf("asked %s, got %s, want %s", tc.asked, res.ProtocolVersion, tc.want)
		}
		if caps, _ := json.Marshal(res.Capabilities); string(caps) != wantCapabilities {
			t.Errorf("capabilities %s, want %s", caps, wantCapabilities)
		}
		sid := resp.Header.Get(headerSessionID)
		if sid == "" {
			t.Fatal("no session id")
		}
		// The session works for ping and DELETE; a session of the anonymous
		// caller is not valid for an account.
		if resp, b := post(t, url, `{"jsonrpc":"2.0","id":9,"method":"ping"}`, headerSessionID, sid); resp.StatusCode != 200 {
			t.Errorf("ping with session: %d %s", resp.StatusCode, b)
		}
		if resp, _ := post(t, url, `{"jsonrpc":"2.0","id":9,"method":"ping"}`, headerSessionID, sid, "Authorization", "Bearer "+keyGood); resp.StatusCode != 404 {
			t.Errorf("ping with another caller's session: %d, want 404", resp.StatusCode)
		}
		if resp, _ := send(t, http.MethodDelete, url, "", headerSessionID, sid); resp.StatusCode != 204 {
			t.Errorf("DELETE: %d, want 204", resp.StatusCode)
		}
		// A terminated session is refused everywhere, even on tools/list.
		for _, body := range []string{listBody, `{"jsonrpc":"2.0","method":"notifications/initialized"}`} {
			if resp, b := post(t, url, body, headerSessionID, sid); resp.StatusCode != 404 {
				t.Errorf("after DELETE: %d %s, want 404", resp.StatusCode, b)
			}
		}
		if resp, _ := send(t, http.MethodDelete, url, "", headerSessionID, sid); resp.StatusCode != 404 {
			t.Errorf("second DELETE: %d, want 404", resp.StatusCode)
		}
	}
}

func TestListFilteredForCaller(t *testing.T) {
	f := startFakes(t)
	url := startGateway(t, testConfig(t, f.url))
	names := func(hdr ...string) string {
		resp, b := post(t, url, listBody, hdr...)
		if resp.StatusCode != 200 {
			t.Fatalf("tools/list: %d %s", resp.StatusCode, b)
		}
		var res struct{ Tools []struct{ Name string } }
		must(t, json.Unmarshal(decode(t, b).Result, &res))
		var out []string
		for _, tl := range res.Tools {
			out = append(out, tl.Name)
		}
		return strings.Join(out, ",")
	}
	if got := names(); got != "block,echo,progress,regional,whoami" {
		t.Errorf("anonymous: %s", got)
	}
	if got := names("Authorization", "Bearer "+keyGood); got != "block,echo,progress,regional,whoami,private" {
		t.Errorf("signed in: %s", got)
	}
}

func TestProtectedResourceMetadata(t *testing.T) {
	f := startFakes(t)
	url := startGateway(t, testConfig(t, f.url))
	base := strings.TrimSuffix(url, "/mcp")
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		resp, b := send(t, http.MethodGet, base+path, "")
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		var m protectedResource
		must(t, json.Unmarshal(b, &m))
		if m.Resource != "https://mcp.example/mcp" || len(m.AuthorizationServers) != 1 || m.AuthorizationServers[0] != "https://mcp.example" || m.ScopesSupported[0] != "mcp" {
			t.Errorf("%s: %+v", path, m)
		}
	}
}

// TestKeyCacheRevocation checks that verified keys are cached and that
// events.keys.revoked drops them at once.
func TestKeyCacheRevocation(t *testing.T) {
	f := startFakes(t)
	url := startGateway(t, testConfig(t, f.url))
	for range 3 {
		if resp, b := post(t, url, whoami, "Authorization", "Bearer "+keyGood); resp.StatusCode != 200 {
			t.Fatalf("call: %d %s", resp.StatusCode, b)
		}
	}
	f.mu.Lock()
	verifies := f.verifies
	f.revoked[accounts.HashKey(keyGood)] = true
	f.mu.Unlock()
	if verifies != 1 {
		t.Errorf("%d verifications for 3 calls, want 1 (cached)", verifies)
	}
	b, _ := json.Marshal(accounts.KeyVerifyResponse{AccountID: acctGood, KeyID: "k1"})
	must(t, f.nc.Publish(accounts.KeyRevoked.Subject, b))
	servicetest.Eventually(t, 5*time.Second, func() bool {
		resp, _ := post(t, url, whoami, "Authorization", "Bearer "+keyGood)
		return resp.StatusCode == 401
	}, "a revoked key is refused")
}

// TestToolPayloadTooLarge: tool arguments or a tool result over the NATS
// max payload get a JSON-RPC error that says too large and names the
// limit, at once, instead of an internal error or a timeout.
func TestToolPayloadTooLarge(t *testing.T) {
	f := startFakes(t)
	cfg := testConfig(t, f.url)
	cfg.MaxRequestBytes = 4 << 20
	url := startGateway(t, cfg)
	limit := f.nc.MaxPayload()
	tests := []struct {
		name string
		body string
		what string
	}{
		{"arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("a", int(limit)) + `"}}}`, "request too large"},
		{"result", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big","arguments":{"bytes":%d}}}`, limit), "reply too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Now()
			resp, body := post(t, url, tt.body, "Authorization", "Bearer "+keyGood)
			if d := time.Since(t0); d > 5*time.Second {
				t.Errorf("took %s, want at once", d)
			}
			r := decode(t, body)
			if resp.StatusCode != http.StatusOK || r.Error == nil || r.Error.Code != -32602 {
				t.Fatalf("%d %.300s, want a -32602 error", resp.StatusCode, body)
			}
			if !strings.Contains(r.Error.Message, tt.what) || !strings.Contains(r.Error.Message, fmt.Sprint(limit)) || strings.Contains(r.Error.Message, "registry.tools") {
				t.Errorf("message %q", r.Error.Message)
			}
			if !strings.Contains(string(r.Error.Data), `"reason":"too_large"`) || !strings.Contains(string(r.Error.Data), fmt.Sprintf(`"limit_bytes":%d`, limit)) {
				t.Errorf("data %s", r.Error.Data)
			}
		})
	}
}

// bearerTransport adds an Authorization header to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestGoSDKClient runs the official Go SDK client against /mcp in both
// eras, with and without an API key: initialize (or discover), list, call.
func TestGoSDKClient(t *testing.T) {
	f := startFakes(t)
	url := startGateway(t, testConfig(t, f.url))
	for _, tc := range []struct {
		name, version, key string
	}{
		{"modern anonymous", "", ""},
		{"modern with key", "", keyGood},
		{"2025-11-25 anonymous", "2025-11-25", ""},
		{"2025-11-25 with key", "2025-11-25", keyGood},
		{"2025-03-26 with key", "2025-03-26", keyGood},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			hc := http.DefaultClient
			if tc.key != "" {
				hc = &http.Client{Transport: bearerTransport{tc.key}}
			}
			client := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc},
				&mcp.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer cs.Close()
			want := tc.version
			if want == "" {
				want = modernVersion
			}
			if got := cs.InitializeResult().ProtocolVersion; got != want {
				t.Errorf("negotiated %s, want %s", got, want)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			var names []string
			for _, tl := range tools.Tools {
				names = append(names, tl.Name)
			}
			if want := tc.key != ""; strings.Contains(strings.Join(names, ","), "private") != want {
				t.Errorf("tools %v (signed in: %v)", names, want)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if tx, ok := res.Content[0].(*mcp.TextContent); !ok || tx.Text != "hi" {
				t.Errorf("echo: %+v", res.Content)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
			if tc.key == "" {
				if err == nil {
					t.Fatalf("anonymous whoami succeeded: %+v", res)
				}
				return
			}
			if err != nil {
				t.Fatalf("whoami: %v", err)
			}
			if tx, ok := res.Content[0].(*mcp.TextContent); !ok || tx.Text != acctGood {
				t.Errorf("whoami: %+v", res.Content)
			}
		})
	}
}

// TestSessionsAcrossReplicas initializes on one gateway and calls on
// another that shares MCP_SESSION_KEYS, and checks key rotation.
func TestSessionsAcrossReplicas(t *testing.T) {
	f := startFakes(t)
	a := startGateway(t, testConfig(t, f.url))
	cfgB := testConfig(t, f.url)
	// B seals with a new key but still opens A's sessions.
	cfgB.MCPSessionKeys = []string{"ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=", testSecret}
	b := startGateway(t, cfgB)

	resp, _ := post(t, a, initBody)
	sid := resp.Header.Get(headerSessionID)
	for _, body := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b"}}}`} {
		resp, got := post(t, b, body, headerSessionID, sid)
		if resp.StatusCode != 200 || decode(t, got).Error != nil {
			t.Fatalf("on replica B: %d %s", resp.StatusCode, got)
		}
	}
	// B's new sessions do not open on A, which lacks B's new key: ping is
	// refused, tools/call tolerated.
	resp, _ = post(t, b, initBody)
	sidB := resp.Header.Get(headerSessionID)
	if resp, _ := post(t, a, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, headerSessionID, sidB); resp.StatusCode != 404 {
		t.Errorf("ping with an unknown key's session: %d, want 404", resp.StatusCode)
	}
	if resp, _ := post(t, a, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, headerSessionID, sidB); resp.StatusCode != 200 {
		t.Errorf("tools/list with an unknown session: %d, want 200", resp.StatusCode)
	}
	// DELETE on A ends the session on B too.
	if resp, _ := send(t, http.MethodDelete, a, "", headerSessionID, sid); resp.StatusCode != 204 {
		t.Fatalf("DELETE on A: %d", resp.StatusCode)
	}
	servicetest.Eventually(t, 5*time.Second, func() bool {
		resp, _ := post(t, b, listBody, headerSessionID, sid)
		return resp.StatusCode == 404
	}, "B refuses the session deleted on A")
}

// TestConnectorQuirks replays what the OpenAI and Anthropic connectors and
// other field clients send: no session id at all, no protocol version
// header (2025-03-26 assumed), notifications/initialized without a session,
// a stale session id, and a 2025-03-26 batch.
func TestConnectorQuirks(t *testing.T) {
	f := startFakes(t)
	url := startGateway(t, testConfig(t, f.url))
	steps := []struct {
		body   string
		hdr    []string
		status int
		want   string
	}{
		{`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"openai-mcp","version":"1.0.0"}}}`, nil, 200, `"protocolVersion":"2025-03-26"`},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil, 202, ""},
		{`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`, []string{headerSessionID, "stale-id"}, 202, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, nil, 200, `"name":"echo"`},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, []string{headerSessionID, "a3f9c2-from-another-gateway"}, 200, `"name":"echo"`},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"q"}}}`, []string{headerProtocolVersion, "2025-03-26"}, 200, `"text":"q"`},
		{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":null}}`, []string{headerSessionID, "stale-id"}, 200, `"content"`},
		{`[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":5,"method":"tools/list"},{"jsonrpc":"2.0","id":6,"method":"ping"}]`, nil, 200, `"id":6`},
		{`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"whoami","arguments":{}}}`, []string{"Authorization", "Bearer " + keyGood}, 200, acctGood},
	}
	for i, s := range steps {
		resp, b := post(t, url, s.body, s.hdr...)
		if resp.StatusCode != s.status || !strings.Contains(string(b), s.want) {
			t.Errorf("step %d: %d %s, want %d with %s", i, resp.StatusCode, b, s.status, s.want)
		}
	}
	var batch []json.RawMessage
	_, b := post(t, url, steps[7].body)
	if err := json.Unmarshal(b, &batch); err != nil || len(batch) != 2 {
		t.Errorf("batch reply %s", b)
	}
}

// TestRateLimit checks 429 with Retry-After per IP and per account.
func TestRateLimit(t *testing.T) {
	f := startFakes(t)
	cfg := testConfig(t, f.url)
	cfg.RateLimitIP, cfg.RateLimitAcct = 1, 1
	url := startGateway(t, cfg)
	for _, hdr := range [][]string{nil, {"Authorization", "Bearer " + keyGood}} {
		if resp, _ := post(t, url, listBody, hdr...); resp.StatusCode != 200 {
			t.Fatalf("first request: %d", resp.StatusCode)
		}
		resp, _ := post(t, url, listBody, hdr...)
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("second request: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	// Another account has its own budget.
	if resp, _ := post(t, url, listBody, "Authorization", "Bearer "+keyOther); resp.StatusCode != 200 {
		t.Errorf("other account: %d", resp.StatusCode)
	}
	// The account's budget is shared with /api.
	resp, _ := send(t, http.MethodGet, strings.TrimSuffix(url, "/mcp")+"/api/me", "", "Authorization", "Bearer "+keyGood)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("/api/me over the budget: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}
