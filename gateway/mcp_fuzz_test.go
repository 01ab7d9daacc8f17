package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// FuzzMCPPost feeds arbitrary bodies and transport headers to /mcp. The
// seed corpus runs in every `go test`; `go test -fuzz FuzzMCPPost` explores
// further. Whatever comes in, the handler must not panic and must answer
// with a 4xx, a 202 without body, or a JSON-RPC reply (an object with
// result or error, or a batch of them).
func FuzzMCPPost(f *testing.F) {
	seeds := []struct{ body, version, method, name, session string }{
		{initBody, "", "", "", ""},
		{listBody, "2025-06-18", "", "", "bogus"},
		{whoami, "2025-11-25", "", "", ""},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "", "", "", ""},
		{`[` + listBody + `,{"jsonrpc":"2.0","id":3,"method":"ping"}]`, "", "", "", ""},
		{`[` + listBody + `]`, "2025-06-18", "", "", ""},
		{`{"jsonrpc":"2.0","id":5,"method":"server/discover","params":{` + modernMeta + `}}`, modernVersion, "server/discover", "", ""},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo",` + modernMeta + `}}`, modernVersion, "tools/call", "echo", ""},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo",` + modernMeta + `}}`, modernVersion, "tools/call", "", ""},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "", "", "", ""},
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, "", "", "", ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":[1]}}`, "", "", "", ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}`, "", "", "", ""},
		{`{"jsonrpc":"2.0","id":1,"method":""}`, "", "", "", ""},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":7}}`, "", "", "", ""},
		{`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{` + modernMeta + `}}`, modernVersion, "subscriptions/listen", "", ""},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{"x":[]}}}`, "", "", "", ""},
		{`{"jsonrpc":"2.0","id":2,"result":{}}`, "", "", "", ""},
		{"\xff\xfe", "", "", "", ""},
		{`{"jsonrpc":`, "", "", "", ""},
		{`null`, "", "", "", ""},
		{`[]`, "", "", "", ""},
		{`[1,2]`, "", "", "", ""},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, "garbage\x00", "", "", "\x01"},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":5}}}`, "", "", "", ""},
	}
	for _, s := range seeds {
		f.Add(s.body, s.version, s.method, s.name, s.session)
	}
	m := testMCP(f, startFakes(f))
	f.Fuzz(func(t *testing.T, body, version, method, name, session string) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		for k, v := range map[string]string{headerProtocolVersion: version, headerMethod: method, headerName: name, headerSessionID: session} {
			if v != "" && validHeaderValue(v) {
				req.Header.Set(k, v)
			}
		}
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, req)
		switch {
		case rec.Code == http.StatusAccepted:
			if rec.Body.Len() != 0 {
				t.Fatalf("202 with a body %q", rec.Body)
			}
			return
		case rec.Code >= 500:
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
		b := rec.Body.Bytes()
		if rec.Code >= 400 && rec.Code < 500 {
			return
		}
		if len(b) > 0 && b[0] == '[' {
			var batch []rpcReply
			if err := json.Unmarshal(b, &batch); err != nil {
				t.Fatalf("batch reply %q: %v", b, err)
			}
			return
		}
		var r rpcReply
		if err := json.Unmarshal(b, &r); err != nil || (r.Error == nil && r.Result == nil) {
			t.Fatalf("status %d with %q for %q", rec.Code, b, body)
		}
	})
}

// testMCP is a /mcp handler over the fakes, without HTTP server or node.
func testMCP(t testing.TB, fk *fakes) *mcpServer {
	t.Helper()
	client := wire.NewClient(wire.ClientOptions{Conn: fk.nc})
	keys, _, err := sessionKeys([]string{testSecret}, "")
	must(t, err)
	seal, err := newSealer(keys, time.Hour)
	must(t, err)
	h, err := newHub(fk.nc)
	must(t, err)
	t.Cleanup(h.close)
	accts := accounts.NewAccounts(client)
	return newMCPServer(mcpOptions{
		Registry: registry.NewClient(client),
		Conn:     fk.nc,
		Auth: func(r *http.Request, token string) (*Principal, error) {
			v, err := accts.VerifyKey(r.Context(), &accounts.KeyVerifyRequest{Hash: accounts.HashKey(token)})
			if err != nil {
				return nil, err
			}
			return &Principal{AccountID: v.AccountID, Scopes: v.Scopes}, nil
		},
		Sealer:       seal,
		Revoked:      newRevocations(),
		Hub:          h,
		Limits:       newLimits(limitsOptions{Streams: 4}),
		PublicURL:    "https://mcp.example",
		MaxBodyBytes: 1 << 20,
		KeepAlive:    time.Second,
		Version:      "test",
		Log:          servicetest.Logger(t),
	})
}

// validHeaderValue reports whether net/http would send v as a header value.
func validHeaderValue(v string) bool {
	for _, c := range []byte(v) {
		if (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
