package registrysvc

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCappedTransport: what a server sends is passed on whole when under
// the cap; over it, an answer to a request becomes a JSON-RPC error for
// that request, an event of the standalone stream is skipped, and any
// other body fails its read, none of them read past the cap.
func TestCappedTransport(t *testing.T) {
	const max = 64
	big := strings.Repeat("x", 10*max)
	errFor := func(id string) string {
		return `{"error":{"code":-32603,"message":"the server's answer is larger than 64 bytes (EXTERNAL_MAX_RESULT_BYTES) and was not read"},"id":` + id + `,"jsonrpc":"2.0"}`
	}
	for _, tc := range []struct {
		name        string
		method      string
		req         string // request body
		contentType string
		body        string
		want        string
		wantErr     bool
	}{
		{name: "small JSON answer", method: "POST", req: `{"jsonrpc":"2.0","id":7,"method":"tools/call"}`, contentType: "application/json",
			body: `{"jsonrpc":"2.0","id":7,"result":{}}`, want: `{"jsonrpc":"2.0","id":7,"result":{}}`},
		{name: "big JSON answer", method: "POST", req: `{"jsonrpc":"2.0","id":7,"method":"tools/call"}`, contentType: "application/json",
			body: `{"jsonrpc":"2.0","id":7,"result":"` + big + `"}`, want: errFor("7")},
		{name: "big JSON answer, string id", method: "POST", req: `{"jsonrpc":"2.0","id":"a-1","method":"tools/list"}`, contentType: "application/json; charset=utf-8",
			body: `{"jsonrpc":"2.0","id":"a-1","result":"` + big + `"}`, want: errFor(`"a-1"`)},
		{name: "small events", method: "POST", req: `{"jsonrpc":"2.0","id":7}`, contentType: "text/event-stream",
			body: "event: message\r\ndata: {\"a\":1}\r\n\r\n: comment\n\ndata: {\"b\":2}\n\n", want: "event: message\r\ndata: {\"a\":1}\r\n\r\n: comment\n\ndata: {\"b\":2}\n\n"},
		{name: "big event on a request's stream", method: "POST", req: `{"jsonrpc":"2.0","id":7}`, contentType: "text/event-stream",
			body: "data: {\"n\":1}\n\ndata: " + big + "\n\ndata: {\"n\":3}\n\n", want: "data: {\"n\":1}\n\nevent: message\ndata: " + errFor("7") + "\n\n"},
		{name: "big event of many lines", method: "POST", req: `{"jsonrpc":"2.0","id":7}`, contentType: "text/event-stream",
			body: strings.Repeat("data: 0123456789\n", 20) + "\n", want: "event: message\ndata: " + errFor("7") + "\n\n"},
		{name: "big event on the standalone stream", method: "GET", contentType: "text/event-stream",
			body: "data: {\"n\":1}\n\ndata: " + big + "\ndata: more\n\ndata: {\"n\":3}\n\n", want: "data: {\"n\":1}\n\ndata: {\"n\":3}\n\n"},
		{name: "big error page", method: "POST", req: `{"jsonrpc":"2.0","id":7}`, contentType: "text/html", body: big, wantErr: true},
		{name: "big answer to a notification", method: "POST", req: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, contentType: "application/json", body: big, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				_, _ = io.WriteString(w, tc.body)
			}))
			t.Cleanup(srv.Close)
			req, err := http.NewRequest(tc.method, srv.URL, strings.NewReader(tc.req))
			if err != nil {
				t.Fatal(err)
			}
			ct := &cappedTransport{base: http.DefaultTransport, max: max, log: slog.New(slog.DiscardHandler)}
			resp, err := ct.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if tc.wantErr {
				if err == nil || len(got) > max {
					t.Errorf("read %d bytes, err %v; want an error within %d bytes", len(got), err, max)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Errorf("read %q, %v\nwant %q", got, err, tc.want)
			}
		})
	}
}
