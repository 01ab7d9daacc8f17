package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

func TestCheckJSONText(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string // "" means accepted
	}{
		{"plain", `{"question":"héllo 😀"}`, ""},
		{"escaped pair", `{"question":"\ud83d\ude00"}`, ""},
		{"escaped backslash before u", `{"question":"\\u0000 \\ud800"}`, ""},
		{"other escapes", `{"question":"a\"b\\c\n\t\u00e9"}`, ""},
		{"NUL", `{"question":"a\u0000b"}`, "NUL"},
		{"lone high, upper-case hex", `{"question":"\uDBFFx"}`, "unpaired"},
		{"lone high", `{"question":"\ud800"}`, "unpaired"},
		{"high then text", `{"question":"\ud800abcdef"}`, "unpaired"},
		{"high then high", `{"question":"\ud800\ud800"}`, "unpaired"},
		{"lone low", `{"question":"\udc00"}`, "unpaired"},
		{"high at end of a key", `{"\uD800":1}`, "unpaired"},
		{"invalid UTF-8", "{\"question\":\"\xff\xfe\"}", "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkJSONText([]byte(tt.doc))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !wire.IsCode(err, wire.InvalidArgument)):
				t.Fatalf("err = %v, want invalid_argument with %q", err, tt.want)
			}
		})
	}
}

func TestMapCodeTooLarge(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		http     int
		jsonrpc  int
		wantCode wire.Code
	}{
		{"too large", wire.TooLarge("request", 10, 5), http.StatusRequestEntityTooLarge, -32602, wire.ResourceExhausted},
		{"too large after the wire", &wire.Error{Code: wire.ResourceExhausted, Details: map[string]any{"reason": "too_large", "limit_bytes": 5.0}}, http.StatusRequestEntityTooLarge, -32602, wire.ResourceExhausted},
		{"rate limit", wire.Errorf(wire.ResourceExhausted, "slow down"), http.StatusTooManyRequests, -32603, wire.ResourceExhausted},
	}
	for _, tt := range tests {
		code, m := mapCode(tt.err)
		if code != tt.wantCode || m.HTTP != tt.http || m.JSONRPC != tt.jsonrpc {
			t.Errorf("%s: %s %+v, want %s %d %d", tt.name, code, m, tt.wantCode, tt.http, tt.jsonrpc)
		}
	}
}

// TestAPIErrorsHideInternals: /api error bodies never carry internal
// detail such as NATS subjects: an internal error is shown as its kind
// only, and a service that does not answer is named by its service.
func TestAPIErrorsHideInternals(t *testing.T) {
	f := startFakes(t)
	url := "http://" + startService(t, testConfig(t, f.url)).Addr() + "/api/me"
	resp, body := send(t, http.MethodGet, url, "", "Authorization", "Bearer "+keyGood)
	if resp.StatusCode != http.StatusServiceUnavailable || strings.Contains(string(body), "vfs.accounts") || !strings.Contains(string(body), "vfs service") {
		t.Errorf("no responders: %d %s", resp.StatusCode, body)
	}
	acc, err := wire.NewService(f.nc, wire.ServiceOptions{Name: "vfs", Version: "0.0.1", Log: servicetest.Logger(t)})
	must(t, err)
	t.Cleanup(func() { _ = acc.Stop(context.Background()) })
	must(t, wire.Serve(acc, accounts.AccountsGet, func(context.Context, *accounts.AccountGetRequest) (*accounts.Account, error) {
		return nil, wire.Errorf(wire.Internal, "request to registry.tools.call failed")
	}))
	resp, body = send(t, http.MethodGet, url, "", "Authorization", "Bearer "+keyGood)
	if resp.StatusCode != http.StatusInternalServerError || strings.Contains(string(body), "registry.tools.call") || !strings.Contains(string(body), `"internal error"`) {
		t.Errorf("internal: %d %s", resp.StatusCode, body)
	}
}
