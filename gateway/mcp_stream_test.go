package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/gateway/internal/authn"
	"github.com/mirobody/mirobody-go/gateway/internal/mcpserver"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/vfs/userdata"
	"github.com/mirobody/mirobody-go/services/wire"
)

// openStream opens a GET or POST event stream and returns a channel of its
// JSON-RPC messages; the stream closes at cleanup.
func openStream(t *testing.T, method, url, body string, hdr ...string) (*http.Response, <-chan rpcReply) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	must(t, err)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	ch := make(chan rpcReply, 16)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var r rpcReply
				if json.Unmarshal([]byte(data), &r) == nil {
					ch <- r
				}
			}
		}
	}()
	return resp, ch
}

// next waits for the next message on ch.
func next(t *testing.T, ch <-chan rpcReply) rpcReply {
	t.Helper()
	select {
	case r, ok := <-ch:
		if !ok {
			t.Fatal("stream closed")
		}
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no message on the stream")
	}
	return rpcReply{}
}

func TestLegacyStreamListChanged(t *testing.T) {
	f := startFakes(t)
	cfg := testConfig(t, f.url)
	cfg.MCPMaxStreams = 1
	gw := startService(t, cfg)
	url := mcpURL(gw)
	pub := func(subject string, v any) {
		b, _ := json.Marshal(v)
		must(t, f.nc.Publish(subject, b))
	}

	resp, mine := openStream(t, http.MethodGet, url, "", "Authorization", "Bearer "+keyGood)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	_, theirs := openStream(t, http.MethodGet, url, "", "Authorization", "Bearer "+keyOther)

	// A second stream for the same account is over MCP_MAX_STREAMS_PER_ACCOUNT.
	if resp, _ := send(t, http.MethodGet, url, "", "Authorization", "Bearer "+keyGood); resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("second stream: %d, want 429 with Retry-After", resp.StatusCode)
	}

	// The streams are registered once the hub holds both listeners.
	waitListeners(t, gw, 2)
	pub(userdata.DataChanged.For(acctGood).Subject, userdata.DataChangedEvent{AccountID: acctGood})
	if r := next(t, mine); r.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %+v", r)
	}
	pub(registry.Changed.Subject, registry.ChangedEvent{Revision: "2"})
	if r := next(t, theirs); r.Method != "notifications/tools/list_changed" {
		t.Fatalf("other account got %+v", r)
	}
	if r := next(t, mine); r.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %+v", r)
	}
	select {
	case r := <-theirs:
		t.Fatalf("the other account saw a change of mine: %+v", r)
	default:
	}
}

// waitListeners waits until n streams are registered on s.
func waitListeners(t *testing.T, s *Service, n int) {
	t.Helper()
	servicetest.Eventually(t, 5*time.Second, func() bool {
		return s.mcp.Streams() >= n
	}, "stream listeners registered")
}

func TestModernListen(t *testing.T) {
	f := startFakes(t)
	url := startGateway(t, testConfig(t, f.url))
	body := `{"jsonrpc":"2.0","id":"sub-1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"promptsListChanged":true},` + modernMeta + `}}`
	resp, ch := openStream(t, http.MethodPost, url, body, modernHeaders("subscriptions/listen", "")...)
	if resp.StatusCode != 200 {
		t.Fatalf("listen: %d", resp.StatusCode)
	}
	ack := next(t, ch)
	if ack.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first frame %+v", ack)
	}
	if !strings.Contains(string(ack.Params), `"toolsListChanged":true`) || !strings.Contains(string(ack.Params), `"promptsListChanged":true`) ||
		strings.Contains(string(ack.Params), "resources") ||
		!strings.Contains(string(ack.Params), `"io.modelcontextprotocol/subscriptionId":"sub-1"`) {
		t.Errorf("ack %s", ack.Params)
	}
	b, _ := json.Marshal(registry.ChangedEvent{Revision: "3"})
	must(t, f.nc.Publish(registry.Changed.Subject, b))
	r := next(t, ch)
	if r.Method != "notifications/tools/list_changed" || !strings.Contains(string(r.Params), `"sub-1"`) {
		t.Fatalf("got %+v %s", r, r.Params)
	}
	// Resources were not asked for: only the prompts' list_changed of this
	// event is sent.
	b, _ = json.Marshal(registry.ResourcesChangedEvent{ResourcesListChanged: true, PromptsListChanged: true, Updated: []string{"skill://a/SKILL.md"}})
	must(t, f.nc.Publish(registry.ResourcesChanged.Subject, b))
	if r := next(t, ch); r.Method != "notifications/prompts/list_changed" || !strings.Contains(string(r.Params), `"sub-1"`) {
		t.Fatalf("got %+v %s", r, r.Params)
	}
	b, _ = json.Marshal(registry.ChangedEvent{Revision: "4"})
	must(t, f.nc.Publish(registry.Changed.Subject, b))
	if r := next(t, ch); r.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %+v, want only the tools change after the prompts one", r)
	}
}

func TestProgressReachesClient(t *testing.T) {
	f := startFakes(t)
	url := startGateway(t, testConfig(t, f.url))
	body := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"progress","arguments":{},"_meta":{"progressToken":"tok"}}}`
	resp, ch := openStream(t, http.MethodPost, url, body)
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("content type %s", resp.Header.Get("Content-Type"))
	}
	var got []rpcReply
	for r := range ch {
		got = append(got, r)
	}
	if len(got) != 3 || got[0].Method != "notifications/progress" || got[1].Method != "notifications/progress" || string(got[2].ID) != "4" {
		t.Fatalf("stream %+v", got)
	}
	var p struct {
		ProgressToken string  `json:"progressToken"`
		Progress      float64 `json:"progress"`
		Total         float64 `json:"total"`
	}
	must(t, json.Unmarshal(got[1].Params, &p))
	if p.ProgressToken != "tok" || p.Progress != 2 || p.Total != 2 {
		t.Errorf("progress %+v", p)
	}
	// Without a token the reply is plain JSON.
	resp, b := post(t, url, strings.Replace(body, `,"_meta":{"progressToken":"tok"}`, "", 1))
	if resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(b), "done") {
		t.Errorf("plain call: %s %s", resp.Header.Get("Content-Type"), b)
	}
}

func TestLegacyCancellationReachesTool(t *testing.T) {
	f := startFakes(t)
	url := startGateway(t, testConfig(t, f.url))
	resp, _ := post(t, url, initBody)
	sid := resp.Header.Get(headerSessionID)
	done := make(chan []byte, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"block"}}`))
		req.Header.Set(headerSessionID, sid)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- nil
			return
		}
		defer resp.Body.Close()
		var buf strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&buf)
		done <- []byte(buf.String())
	}()
	callID := <-f.started
	resp, _ = post(t, url, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":77,"reason":"user"}}`, headerSessionID, sid)
	if resp.StatusCode != 202 {
		t.Fatalf("cancel: %d", resp.StatusCode)
	}
	select {
	case b := <-done:
		if !strings.Contains(string(b), "cancelled") {
			t.Fatalf("call ended with %s", b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the tool never saw the cancellation")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.cancels) != 1 || f.cancels[0].CallID != callID || f.cancels[0].Reason != "user" {
		t.Errorf("cancels %+v, want one for %s", f.cancels, callID)
	}
}

// TestCancellationStaysWithItsCaller: a notifications/cancelled from
// another account that copies a session id and a request id stops
// nothing; the session's own caller still can, and every cancel event
// names the account it speaks for.
func TestCancellationStaysWithItsCaller(t *testing.T) {
	f := startFakes(t)
	url := startGateway(t, testConfig(t, f.url))
	resp, _ := post(t, url, initBody, "Authorization", "Bearer "+keyGood)
	sid := resp.Header.Get(headerSessionID)
	done := make(chan string, 1)
	go func() {
		_, b := post(t, url, `{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"block"}}`, headerSessionID, sid, "Authorization", "Bearer "+keyGood)
		done <- string(b)
	}()
	callID := <-f.started
	cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":77,"reason":"mischief"}}`
	for _, hdr := range [][]string{
		{headerSessionID, sid, "Authorization", "Bearer " + keyOther}, // another account, Alice's session id
		{headerSessionID, sid}, // anonymous, Alice's session id
	} {
		if resp, _ := post(t, url, cancel, hdr...); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("cancel: %d", resp.StatusCode)
		}
	}
	servicetest.Eventually(t, 10*time.Second, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.cancels) == 2
	}, "the foreign cancellations were not published")
	select {
	case b := <-done:
		t.Fatalf("a foreign cancellation ended the call: %s", b)
	default:
	}
	resp, _ = post(t, url, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":77,"reason":"user"}}`, headerSessionID, sid, "Authorization", "Bearer "+keyGood)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("cancel: %d", resp.StatusCode)
	}
	select {
	case b := <-done:
		if !strings.Contains(b, "cancelled") {
			t.Fatalf("call ended with %s", b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the owner's cancellation never reached the tool")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	want := []registry.CancelEvent{{CallID: "?", AccountID: acctOther}, {CallID: "?"}, {CallID: callID, AccountID: acctGood, Reason: "user"}}
	for i, ev := range f.cancels {
		if i < 2 && (ev.CallID == callID || ev.AccountID != want[i].AccountID) || i == 2 && ev != want[2] {
			t.Errorf("cancel %d = %+v, want %+v (call %s)", i, ev, want[i], callID)
		}
	}
}

func TestModernStreamCloseCancels(t *testing.T) {
	f := startFakes(t)
	url := startGateway(t, testConfig(t, f.url))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"block",` + modernMeta + `}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	for _, kv := range [][2]string{{"Content-Type", "application/json"}, {headerProtocolVersion, modernVersion}, {headerMethod, "tools/call"}, {headerName, "block"}} {
		req.Header.Set(kv[0], kv[1])
	}
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	callID := <-f.started
	cancel()
	<-errc
	servicetest.Eventually(t, 10*time.Second, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.cancels) == 1 && f.cancels[0].CallID == callID
	}, "closing the stream cancels the call")
}

func TestStreamKeepAlive(t *testing.T) {
	f := startFakes(t)
	url := startGateway(t, testConfig(t, f.url)) // MCP_KEEPALIVE_S is 1
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == ": keep-alive" {
			return
		}
	}
	t.Fatalf("stream ended without a keep-alive: %v", sc.Err())
}

func TestListenEndsWithResultOnShutdown(t *testing.T) {
	f := startFakes(t)
	gw := startService(t, testConfig(t, f.url))
	body := `{"jsonrpc":"2.0","id":42,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`
	_, ch := openStream(t, http.MethodPost, mcpURL(gw), body, modernHeaders("subscriptions/listen", "")...)
	if ack := next(t, ch); ack.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first frame %+v", ack)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	must(t, gw.Stop(ctx))
	if r := next(t, ch); string(r.ID) != "42" || !strings.Contains(string(r.Result), `"resultType":"complete"`) {
		t.Fatalf("last frame %+v %s", r, r.Result)
	}
}

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

// testMCP is a /mcp handler over the fakes behind authn's middleware,
// without HTTP server or node.
func testMCP(t testing.TB, fk *fakes) http.Handler {
	t.Helper()
	return testMCPWith(t, fk, wire.NewClient(wire.ClientOptions{Conn: fk.nc}), time.Minute)
}

// testMCPWith is testMCP over client, with every tool's TOOL_TIMEOUT_S
// toolTimeout.
func testMCPWith(t testing.TB, fk *fakes, client *wire.Client, toolTimeout time.Duration) http.Handler {
	t.Helper()
	lim := authn.NewLimits(authn.LimitsOptions{Streams: 4})
	m, err := mcpserver.New(mcpserver.Options{
		Bus:          client,
		Conn:         fk.nc,
		SessionKeys:  []string{testSecret},
		SessionTTL:   time.Hour,
		Limits:       lim,
		ToolTimeout:  func(string) time.Duration { return toolTimeout },
		Codes:        jsonrpcCode,
		PublicURL:    "https://mcp.example",
		MaxBodyBytes: 1 << 20,
		KeepAlive:    time.Second,
		Version:      "test",
		Log:          servicetest.Logger(t),
	})
	must(t, err)
	t.Cleanup(m.Close)
	auth, err := authn.New(authn.Options{Keys: accounts.NewAccounts(client), Limits: lim})
	must(t, err)
	return auth.Middleware(m, m.Reject)
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

// TestResourceSubscriptions: a legacy session subscribes on one replica and
// its GET stream on another carries notifications/resources/updated for its
// own file (also when a folder above it changes) and a subscribed skill
// file, never another account's file, and nothing after unsubscribing; a
// subscriptions/listen stream gets the updates of its resourceSubscriptions
// only.
func TestResourceSubscriptions(t *testing.T) {
	f := startFakes(t)
	urlA := startGateway(t, testConfig(t, f.url))
	urlB := startGateway(t, testConfig(t, f.url))
	pub := func(subject string, v any) {
		b, _ := json.Marshal(v)
		must(t, f.nc.Publish(subject, b))
	}
	auth := []string{"Authorization", "Bearer " + keyGood}
	resp, _ := post(t, urlA, initBody, auth...)
	sid := resp.Header.Get(headerSessionID)
	_, stream := openStream(t, http.MethodGet, urlA, "", append([]string{headerSessionID, sid}, auth...)...)
	subscribe := func(method, uri string, hdr ...string) rpcReply {
		t.Helper()
		_, b := post(t, urlB, `{"jsonrpc":"2.0","id":5,"method":"`+method+`","params":{"uri":"`+uri+`"}}`, hdr...)
		return decode(t, b)
	}
	withSession := append([]string{headerSessionID, sid}, auth...)
	for _, uri := range []string{"vfs:///memories/notes/a.md", "skill://greet/SKILL.md"} {
		if r := subscribe("resources/subscribe", uri, withSession...); r.Error != nil || string(r.Result) != "{}" {
			t.Fatalf("subscribe %s: %+v %s", uri, r.Error, r.Result)
		}
	}
	if r := subscribe("resources/subscribe", "skill://x/SKILL.md", auth...); r.Error == nil || r.Error.Code != -32602 {
		t.Errorf("subscribe without a session: %+v", r)
	}
	anonResp, _ := post(t, urlA, initBody)
	if resp, _ := post(t, urlB, `{"jsonrpc":"2.0","id":5,"method":"resources/subscribe","params":{"uri":"vfs:///memories/x"}}`,
		headerSessionID, anonResp.Header.Get(headerSessionID)); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous subscription to a user file: %d, want 401", resp.StatusCode)
	}

	updated := func(want string) {
		t.Helper()
		r := next(t, stream)
		if r.Method != "notifications/resources/updated" || !strings.Contains(string(r.Params), `"uri":"`+want+`"`) {
			t.Fatalf("got %+v %s, want an update of %s", r, r.Params, want)
		}
	}
	// Subscriptions reach replica A through NATS: wait until the first
	// update arrives.
	servicetest.Eventually(t, 10*time.Second, func() bool {
		pub(files.Changed.For(acctGood).Subject, files.ChangedEvent{Paths: []string{"/memories/notes/a.md"}})
		select {
		case r := <-stream:
			return r.Method == "notifications/resources/updated"
		case <-time.After(100 * time.Millisecond):
			return false
		}
	}, "the update of a subscribed file")
	for len(stream) > 0 { // further copies of the probe
		<-stream
	}
	pub(files.Changed.For(acctOther).Subject, files.ChangedEvent{Paths: []string{"/memories/notes/a.md"}})
	pub(files.Changed.For(acctGood).Subject, files.ChangedEvent{Paths: []string{"/memories/notes"}})
	updated("vfs:///memories/notes/a.md")
	pub(registry.ResourcesChanged.Subject, registry.ResourcesChangedEvent{Updated: []string{"skill://greet/SKILL.md", "skill://other/SKILL.md"}})
	updated("skill://greet/SKILL.md")
	// Unsubscribing on the stream's own replica takes effect at once there;
	// updates are matched when they are sent, so none follows.
	_, b := post(t, urlA, `{"jsonrpc":"2.0","id":6,"method":"resources/unsubscribe","params":{"uri":"skill://greet/SKILL.md"}}`, withSession...)
	if r := decode(t, b); r.Error != nil {
		t.Fatalf("unsubscribe: %+v", r.Error)
	}
	for i := range 2 {
		pub(registry.ResourcesChanged.Subject, registry.ResourcesChangedEvent{Updated: []string{"skill://greet/SKILL.md"}})
		pub(registry.Changed.Subject, registry.ChangedEvent{Revision: fmt.Sprint(i)})
		if r := next(t, stream); r.Method != "notifications/tools/list_changed" {
			t.Fatalf("after unsubscribing: %+v %s", r, r.Params)
		}
	}

	// The GET stream carries the resource and prompt lists' changes too.
	pub(registry.ResourcesChanged.Subject, registry.ResourcesChangedEvent{ResourcesListChanged: true, PromptsListChanged: true})
	for _, want := range []string{"notifications/resources/list_changed", "notifications/prompts/list_changed"} {
		if r := next(t, stream); r.Method != want {
			t.Fatalf("got %+v, want %s", r, want)
		}
	}

	// The modern era: subscriptions/listen with resourceSubscriptions.
	body := `{"jsonrpc":"2.0","id":"sub-r","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["test://watched"],"resourcesListChanged":true},` + modernMeta + `}}`
	_, ch := openStream(t, http.MethodPost, urlA, body, modernHeaders("subscriptions/listen", "")...)
	if ack := next(t, ch); !strings.Contains(string(ack.Params), `"resourceSubscriptions":["test://watched"]`) {
		t.Fatalf("ack %s", ack.Params)
	}
	pub(registry.ResourcesChanged.Subject, registry.ResourcesChangedEvent{PromptsListChanged: true, Updated: []string{"test://other", "test://watched"}})
	if r := next(t, ch); r.Method != "notifications/resources/updated" || !strings.Contains(string(r.Params), `"test://watched"`) ||
		!strings.Contains(string(r.Params), `"sub-r"`) {
		t.Fatalf("got %+v %s", r, r.Params)
	}
	pub(registry.ResourcesChanged.Subject, registry.ResourcesChangedEvent{ResourcesListChanged: true})
	if r := next(t, ch); r.Method != "notifications/resources/list_changed" {
		t.Fatalf("got %+v, want the resources list_changed and nothing of the prompts", r)
	}
	body = `{"jsonrpc":"2.0","id":"sub-x","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["vfs:///memories/a"]},` + modernMeta + `}}`
	if resp, _ := post(t, urlA, body, modernHeaders("subscriptions/listen", "")...); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous listen on a user file: %d, want 401", resp.StatusCode)
	}
	many := make([]string, 257)
	for i := range many {
		many[i] = fmt.Sprintf("test://r%d", i)
	}
	list, _ := json.Marshal(many)
	body = `{"jsonrpc":"2.0","id":"sub-y","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":` + string(list) + `},` + modernMeta + `}}`
	if resp, b := post(t, urlA, body, modernHeaders("subscriptions/listen", "")...); resp.StatusCode != http.StatusBadRequest || decode(t, b).Error.Code != -32602 {
		t.Errorf("listen on 257 resources: %d %s, want 400 and -32602", resp.StatusCode, b)
	}
}
