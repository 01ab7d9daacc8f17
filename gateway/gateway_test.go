package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/vfs/userdata"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Test API keys understood by the fake vfs keys endpoint.
const (
	keyGood    = "mb_good"
	keyOther   = "mb_other"
	keyNoScope = "mb_noscope"
	acctGood   = "acct-1"
	acctOther  = "acct-2"
	testSecret = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // base64 of 32 bytes
)

// fakes is a stand-in registry-svc and vfs keys endpoint on real NATS: the
// gateway's protocol layer is tested on its own, the full stack in
// services/stack.
type fakes struct {
	url     string
	nc      *nats.Conn
	mu      sync.Mutex
	cancels []registry.CancelEvent
	calls   []registry.CallRequest
	// deadlines holds the deadline each call arrived with, as calls.
	deadlines []time.Time
	// started receives the CallID of every "block" call once it runs.
	started chan string
	// cancelled receives every CancelEvent published.
	cancelled chan registry.CancelEvent
	// revoked holds the hashes of keys the fake vfs no longer accepts.
	revoked map[string]bool
	// verifies counts vfs.keys.verify requests.
	verifies int
	// revocations are the token revocations the fake vfs holds.
	revocations []accounts.Revocation
}

// fakeTools is the fake registry's tool set. "whoami" takes user_info, so
// it needs a caller; "private" is listed for signed-in callers only.
var fakeTools = []registry.Tool{
	{Name: "block", Description: "waits for its cancellation", InputSchema: json.RawMessage(`{"type":"object"}`)},
	{Name: "echo", Description: "echoes text", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
	{Name: "progress", Description: "reports progress twice", InputSchema: json.RawMessage(`{"type":"object"}`)},
	{Name: "regional", Description: "mirrors region in Mcp-Param-Region", InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)},
	{Name: "whoami", Description: "names the caller", InputSchema: json.RawMessage(`{"type":"object"}`), TakesUserInfo: true},
}

var privateTool = registry.Tool{Name: "private", Description: "personal tool", InputSchema: json.RawMessage(`{"type":"object"}`), RequiresData: userdata.KindHealth}

// startFakes serves the fake registry and vfs on a fresh NATS server.
func startFakes(t testing.TB) *fakes {
	t.Helper()
	f := &fakes{url: servicetest.NATS(t), started: make(chan string, 16), revoked: map[string]bool{}}
	f.nc = servicetest.Conn(t, f.url)
	log := servicetest.Logger(t)
	reg, err := wire.NewService(f.nc, wire.ServiceOptions{Name: "registry", Version: "0.0.1", Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Stop(context.Background()) })
	must(t, wire.Serve(reg, registry.ToolsList, func(_ context.Context, req *registry.ListRequest) (*registry.ListResponse, error) {
		out := append([]registry.Tool(nil), fakeTools...)
		if !req.Caller.Anonymous() {
			out = append(out, privateTool)
		}
		return &registry.ListResponse{Tools: out, Revision: "1"}, nil
	}))
	must(t, wire.Serve(reg, registry.ToolsCall, f.call))
	// No skills and no tool folder resources or prompts.
	must(t, wire.Serve(reg, registry.SkillsRead, func(context.Context, *registry.SkillReadRequest) (*registry.SkillReadResponse, error) {
		return nil, wire.Errorf(wire.NotFound, "no skill")
	}))
	must(t, wire.Serve(reg, registry.ResourcesList, func(context.Context, *registry.ResourceListRequest) (*registry.ResourceListResponse, error) {
		return &registry.ResourceListResponse{}, nil
	}))
	must(t, wire.Serve(reg, registry.ResourcesRead, func(context.Context, *registry.ResourceReadRequest) (*registry.ResourceReadResponse, error) {
		return nil, wire.Errorf(wire.NotFound, "no resource")
	}))
	must(t, wire.Serve(reg, registry.PromptsGet, func(context.Context, *registry.PromptGetRequest) (*registry.PromptGetResponse, error) {
		return nil, wire.Errorf(wire.NotFound, "no prompt")
	}))
	cancelled := make(chan registry.CancelEvent, 16)
	sub, err := f.nc.Subscribe(registry.CallsCancel.Subject, func(m *nats.Msg) {
		var ev registry.CancelEvent
		if json.Unmarshal(m.Data, &ev) == nil {
			f.mu.Lock()
			f.cancels = append(f.cancels, ev)
			f.mu.Unlock()
			cancelled <- ev
		}
	})
	must(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	f.cancelled = cancelled

	vfsSvc, err := wire.NewService(f.nc, wire.ServiceOptions{Name: "vfs", Version: "0.0.1", Log: log})
	must(t, err)
	t.Cleanup(func() { _ = vfsSvc.Stop(context.Background()) })
	must(t, wire.Serve(vfsSvc, accounts.KeysVerify, func(_ context.Context, req *accounts.KeyVerifyRequest) (*accounts.KeyVerifyResponse, error) {
		f.mu.Lock()
		revoked := f.revoked[req.Hash]
		f.verifies++
		f.mu.Unlock()
		if revoked {
			return nil, wire.Errorf(wire.Unauthenticated, "revoked key")
		}
		switch req.Hash {
		case accounts.HashKey(keyGood):
			return &accounts.KeyVerifyResponse{AccountID: acctGood, KeyID: "k1", Scopes: []string{"mcp", "api"}}, nil
		case accounts.HashKey(keyOther):
			return &accounts.KeyVerifyResponse{AccountID: acctOther, KeyID: "k2", Scopes: []string{"mcp"}}, nil
		case accounts.HashKey(keyNoScope):
			return &accounts.KeyVerifyResponse{AccountID: acctGood, KeyID: "k3", Scopes: []string{"api"}}, nil
		}
		return nil, wire.Errorf(wire.Unauthenticated, "unknown key")
	}))
	must(t, wire.Serve(vfsSvc, accounts.OAuthRevocationsAdd, func(_ context.Context, req *accounts.RevocationAddRequest) (*wire.Empty, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.revocations = append(f.revocations, req.Revocations...)
		return &wire.Empty{}, nil
	}))
	must(t, wire.Serve(vfsSvc, accounts.OAuthRevocationsList, func(_ context.Context, _ *accounts.RevocationListRequest) (*accounts.RevocationListResponse, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return &accounts.RevocationListResponse{Revocations: slices.Clone(f.revocations), Now: time.Now()}, nil
	}))
	return f
}

// call implements the fake tools.
func (f *fakes) call(ctx context.Context, req *registry.CallRequest) (*registry.CallResponse, error) {
	dl, _ := ctx.Deadline()
	f.mu.Lock()
	f.calls = append(f.calls, *req)
	f.deadlines = append(f.deadlines, dl)
	f.mu.Unlock()
	text := func(s string) *registry.CallResponse {
		b, _ := json.Marshal(map[string]string{"type": "text", "text": s})
		return &registry.CallResponse{Content: []json.RawMessage{b}}
	}
	switch req.Name {
	case "echo":
		var a struct{ Text string }
		_ = json.Unmarshal(req.Arguments, &a)
		return text(a.Text), nil
	case "regional":
		return text("ok"), nil
	case "slow": // unlisted: answers after {"ms": n} milliseconds
		var a struct{ MS int }
		_ = json.Unmarshal(req.Arguments, &a)
		select {
		case <-time.After(time.Duration(a.MS) * time.Millisecond):
			return text("slow done"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case "big": // unlisted: a result of {"bytes": n} bytes
		var a struct{ Bytes int }
		_ = json.Unmarshal(req.Arguments, &a)
		return text(strings.Repeat("b", a.Bytes)), nil
	case "whoami":
		if req.Caller.Anonymous() {
			return nil, wire.Errorf(wire.Unauthenticated, "whoami needs a signed-in caller")
		}
		return text(req.Caller.AccountID), nil
	case "private":
		if req.Caller.Anonymous() {
			return nil, wire.Errorf(wire.NotFound, "unknown tool %q", req.Name)
		}
		return text("private"), nil
	case "progress":
		for i := 1; i <= 2; i++ {
			if req.ProgressSubject != "" {
				b, _ := json.Marshal(registry.ProgressEvent{Progress: float64(i), Total: 2, Message: fmt.Sprintf("step %d", i)})
				_ = f.nc.Publish(req.ProgressSubject, b)
			}
		}
		_ = f.nc.Flush()
		return text("done"), nil
	case "block":
		f.started <- req.CallID
		for {
			select {
			case ev := <-f.cancelled:
				if ev.CallID == req.CallID {
					return text("cancelled"), nil
				}
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	return nil, wire.Errorf(wire.NotFound, "unknown tool %q", req.Name)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// testConfig returns the default configuration pointed at natsURL.
func testConfig(t *testing.T, natsURL string) *conf.Config {
	t.Helper()
	res, err := conf.Load(conf.LoadOptions{Path: "", LookupEnv: func(string) (string, bool) { return "", false }})
	must(t, err)
	c := res.Config
	c.NATSURL = natsURL
	c.HTTPAddr = "127.0.0.1:0"
	c.MCPPublicURL = "https://mcp.example"
	c.AllowedOrigins = []string{"https://app.example"}
	c.MCPSessionKeys = []string{testSecret}
	c.RateLimitAcct, c.RateLimitIP = 0, 0
	c.MaxRequestBytes = 64 << 10
	c.MCPKeepAliveS = 1
	return c
}

// startGateway starts a gateway on cfg and returns its /mcp URL.
func startGateway(t *testing.T, cfg *conf.Config) string {
	t.Helper()
	return mcpURL(startService(t, cfg))
}

// mcpURL is the /mcp URL of a started gateway.
func mcpURL(s *Service) string { return "http://" + s.Addr() + "/mcp" }

// startService starts a gateway on cfg.
func startService(t *testing.T, cfg *conf.Config) *Service {
	t.Helper()
	s := New(Options{Config: cfg, Log: servicetest.Logger(t)})
	must(t, s.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
	})
	return s
}

// post sends body to url with headers given as name, value pairs.
func post(t *testing.T, url, body string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	return send(t, http.MethodPost, url, body, hdr...)
}

func send(t *testing.T, method, url, body string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	must(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp, b
}

// rpcReply is a decoded JSON-RPC response.
type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func decode(t *testing.T, b []byte) rpcReply {
	t.Helper()
	var r rpcReply
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("decoding %q: %v", b, err)
	}
	return r
}

// Transport headers and the modern protocol version, as clients spell them.
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerMethod          = "Mcp-Method"
	headerName            = "Mcp-Name"
	modernVersion         = "2026-07-28"
	// codeSessionNotFound is the JSON-RPC error of an unknown session.
	codeSessionNotFound = -32001
)

// modernHeaders are the headers of a 2026-07-28 request for method (and
// tool name for tools/call).
func modernHeaders(method, name string) []string {
	h := []string{headerProtocolVersion, modernVersion, headerMethod, method}
	if name != "" {
		h = append(h, headerName, name)
	}
	return h
}

// modernMeta is a complete per-request _meta.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`

// An HTTP request's W3C trace context travels on into the NATS requests
// the gateway makes for it.
func TestTraceContextReachesNATS(t *testing.T) {
	f := startFakes(t)
	url := startGateway(t, testConfig(t, f.url))
	seen := make(chan string, 4)
	// A plain subscription gets a copy of every request, beside the queue group.
	sub, err := f.nc.Subscribe(registry.ToolsCall.Subject, func(m *nats.Msg) { seen <- m.Header.Get("traceparent") })
	must(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	must(t, f.nc.Flush())

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	resp, body := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		"Content-Type", "application/json", "Accept", "application/json, text/event-stream",
		"traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	if resp.StatusCode != 200 {
		t.Fatalf("tools/call = %d %s", resp.StatusCode, body)
	}
	select {
	case tp := <-seen:
		if !strings.Contains(tp, traceID) {
			t.Errorf("NATS traceparent %q does not continue trace %s", tp, traceID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no registry call seen")
	}
}

// TestReadTimeoutSparesLongAnswers: HTTP_READ_TIMEOUT_S bounds reading
// the request only; a tool call that answers after it is not cancelled
// (net/http lifts the read deadline once the body is read).
func TestReadTimeoutSparesLongAnswers(t *testing.T) {
	f := startFakes(t)
	cfg := testConfig(t, f.url)
	cfg.HTTPReadTimeoutS = 1
	url := startGateway(t, cfg)
	resp, body := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":2500}}}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "slow done") {
		t.Fatalf("%d %s, want the slow result", resp.StatusCode, body)
	}
}

// dial opens a raw connection to the gateway of cfg.
func dial(t *testing.T, s *Service) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", s.Addr())
	must(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// closedWithin reports whether the server ends conn (answering or not)
// before limit.
func closedWithin(t *testing.T, conn net.Conn, r io.Reader, limit time.Duration) bool {
	t.Helper()
	must(t, conn.SetReadDeadline(time.Now().Add(limit)))
	_, err := io.Copy(io.Discard, r)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// TestSlowClientsAreCut: a client that stops sending its body, or keeps an
// idle connection, is disconnected after HTTP_READ_TIMEOUT_S or
// HTTP_IDLE_TIMEOUT_S.
func TestSlowClientsAreCut(t *testing.T) {
	f := startFakes(t)
	cfg := testConfig(t, f.url)
	cfg.HTTPReadTimeoutS, cfg.HTTPIdleTimeoutS = 1, 1
	s := startService(t, cfg)

	t.Run("stalled body", func(t *testing.T) {
		conn := dial(t, s)
		_, err := io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
		must(t, err)
		if !closedWithin(t, conn, conn, 10*time.Second) {
			t.Fatal("a stalled body kept the connection open")
		}
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		conn := dial(t, s)
		_, err := io.WriteString(conn, "GET /.well-known/oauth-protected-resource HTTP/1.1\r\nHost: x\r\n\r\n")
		must(t, err)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		must(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("%d close=%v, want a kept-alive 200", resp.StatusCode, resp.Close)
		}
		if !closedWithin(t, conn, br, 10*time.Second) {
			t.Fatal("an idle connection stayed open")
		}
	})
}

// TestToolCallDeadline: an /mcp tools/call reaches the registry with the
// tool's deadline (TOOL_TIMEOUT_S, or its TOOL_TIMEOUTS entry) plus the
// registry's reply margin, not the wire client's 30 s default.
func TestToolCallDeadline(t *testing.T) {
	f := startFakes(t)
	cfg := testConfig(t, f.url)
	cfg.ToolTimeoutS = 60
	cfg.ToolTimeouts = map[string]int{"slow": 7}
	url := startGateway(t, cfg)
	for i, tt := range []struct {
		tool, args string
		want       time.Duration
	}{
		{"echo", `{"text":"hi"}`, 60 * time.Second},
		{"slow", `{"ms":1}`, 7 * time.Second},
	} {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tt.tool + `","arguments":` + tt.args + `}}`
		before := time.Now()
		resp, b := post(t, url, body)
		after := time.Now()
		if resp.StatusCode != http.StatusOK || decode(t, b).Error != nil {
			t.Fatalf("%s: %d %s", tt.tool, resp.StatusCode, b)
		}
		f.mu.Lock()
		got := f.deadlines[i]
		f.mu.Unlock()
		want := tt.want + registry.ReplyMargin
		// The header carries milliseconds.
		if got.Before(before.Add(want).Add(-time.Millisecond)) || got.After(after.Add(want)) {
			t.Errorf("%s arrived with deadline now+%s, want now+%s", tt.tool, got.Sub(before).Round(time.Millisecond), want)
		}
	}
}

// TestToolCallTimeoutCancels: when the registry does not answer within the
// tool's deadline and margin, the gateway answers and tells the registry
// to cancel the call (registry.calls.cancel), so the tool host stops it.
func TestToolCallTimeoutCancels(t *testing.T) {
	f := startFakes(t)
	cfg := testConfig(t, f.url)
	cfg.ToolTimeoutS = 1
	url := startGateway(t, cfg)
	began := time.Now()
	// "block" ignores its deadline's margin: it runs until cancelled.
	_, b := post(t, url, `{"jsonrpc":"2.0","id":"t-1","method":"tools/call","params":{"name":"block"}}`)
	took := time.Since(began)
	callID := <-f.started
	if r := decode(t, b); r.Error == nil || r.Error.Code != -32603 {
		t.Errorf("reply %s, want a deadline error", b)
	}
	if want := time.Second + registry.ReplyMargin; took < want || took > want+2*time.Second {
		t.Errorf("the call took %s, want about %s", took, want)
	}
	servicetest.Eventually(t, 5*time.Second, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, ev := range f.cancels {
			if ev.CallID == callID && ev.Reason == "timed out" {
				return true
			}
		}
		return false
	}, "the timed-out call was not cancelled")
}

// TestToolOutlivesWireDefault: a tool that runs longer than the wire
// client's default deadline but within TOOL_TIMEOUT_S succeeds over /mcp
// (the scaled-down form of a 40 s tool under TOOL_TIMEOUT_S=60 against
// the 30 s default).
func TestToolOutlivesWireDefault(t *testing.T) {
	f := startFakes(t)
	client := wire.NewClient(wire.ClientOptions{Conn: f.nc, DefaultTimeout: 2 * time.Second})
	srv := httptest.NewServer(testMCPWith(t, f, client, 5*time.Second))
	t.Cleanup(srv.Close)
	resp, b := post(t, srv.URL+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":3000}}}`)
	if r := decode(t, b); resp.StatusCode != http.StatusOK || r.Error != nil || !strings.Contains(string(r.Result), "slow done") {
		t.Fatalf("a 3 s tool under TOOL_TIMEOUT_S=5 with a 2 s wire default: %d %s", resp.StatusCode, b)
	}
}
