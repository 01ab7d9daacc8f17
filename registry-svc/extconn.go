package registrysvc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/mirobody/mirobody-go/services/buildinfo"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/vfs/mcpservers"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Budgets of one external server. A failure puts the server in backoff
// (retryBase doubling up to retryMax): during it, its tools are left out
// of lists and its calls fail fast, so a down server costs nothing else.
const (
	connectTimeout = 10 * time.Second
	listTimeout    = 5 * time.Second
	retryBase      = time.Second
	retryMax       = time.Minute
)

// remoteToolName is what MCP allows a tool name to be.
var remoteToolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// serverSpec is everything needed to connect to one server.
type serverSpec struct {
	name    string
	url     string
	headers http.Header
	// fingerprint changes when the URL or a credential changes.
	fingerprint string
	// oauth is set for a server with auth oauth: its tokens.
	oauth *mcpservers.MCPServerOAuth
}

func newSpec(name, url, token string, headers map[string]string) serverSpec {
	h := http.Header{}
	for k, v := range headers {
		h.Set(k, v)
	}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	sum := sha256.New()
	fmt.Fprintf(sum, "%s\x00%s\x00", name, url)
	_ = h.Write(sum)
	return serverSpec{name: name, url: url, headers: h, fingerprint: hex.EncodeToString(sum.Sum(nil))[:16]}
}

// extTool is one tool of an external server, as the registry lists it.
type extTool struct {
	tool   registry.Tool
	remote string // the tool's own name on its server
	retry  bool   // read-only or idempotent: one more attempt on a lost session
	conn   *extConn
}

// extConn is the cached session with one server of one account (or of one
// chat turn), its tools and its health.
type extConn struct {
	x       *external
	account string
	spec    serverSpec
	turn    bool // given by a chat turn: no events, closed when idle

	// stale is set by the server's list_changed (from the SDK's goroutine).
	stale    atomic.Bool
	lastUsed atomic.Int64 // unix nanoseconds

	mu       sync.Mutex
	auth     *oauthTransport // for a server with auth oauth, made on first connect
	session  *mcp.ClientSession
	tools    []*extTool
	toolsSum string
	listed   bool
	closed   bool
	health   registry.Health
	failures int
	retryAt  time.Time
}

// errDown is returned while a server is in backoff.
var errDown = errors.New("server is down")

func (c *extConn) touch() { c.lastUsed.Store(time.Now().UnixNano()) }

// load returns the server's tools, listing them when not known yet (or
// refresh is set: the health check, which does not count as a use); a
// failure marks the server down.
func (c *extConn) load(ctx context.Context, refresh bool) ([]*extTool, string, error) {
	if !refresh {
		c.touch()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, "", errDown
	}
	if c.listed && !refresh && !c.stale.Load() {
		return c.tools, c.toolsSum, nil
	}
	if time.Now().Before(c.retryAt) {
		return nil, "", errDown
	}
	before, beforeSum := c.health.Status, c.toolsSum
	// Cleared before listing, so that a list_changed arriving meanwhile
	// is not lost.
	c.stale.Store(false)
	tools, sum, dropped, err := c.list(ctx)
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		return nil, "", err // the caller left: says nothing about the server
	}
	if err != nil {
		c.fail(err)
	} else {
		c.tools, c.toolsSum, c.listed = tools, sum, true
		c.failures, c.retryAt = 0, time.Time{}
		n, now := len(tools), time.Now().UTC()
		c.health = registry.Health{Status: registry.HealthOK, Tools: &n, CheckedAt: &now, Dropped: dropped}
	}
	// ok -> down, down -> ok and a changed tool set change the account's
	// list; the first answer does not (the caller is computing it).
	if before == registry.HealthOK && err != nil || before == registry.HealthDown && err == nil ||
		before == registry.HealthOK && err == nil && sum != beforeSum {
		c.x.changed(c)
	}
	if err != nil {
		return nil, "", err
	}
	return c.tools, c.toolsSum, nil
}

// fail records a failure: the session is dropped and the server backs off.
// Called with mu held.
func (c *extConn) fail(err error) {
	if c.session != nil {
		_ = c.session.Close()
		c.session = nil
	}
	c.tools, c.toolsSum, c.listed = nil, "", false
	c.failures++
	wait := retryBase << min(c.failures-1, 6)
	c.retryAt = time.Now().Add(min(wait, retryMax))
	now := time.Now().UTC()
	msg := err.Error()
	if c.auth != nil && c.auth.needAuth.Load() {
		msg = errAuthNeeded.Error()
	}
	c.health = registry.Health{Status: registry.HealthDown, Error: msg, CheckedAt: &now}
	c.x.log.Warn("external MCP server failed", "account", c.account, "server", c.spec.name, "retry_in", time.Until(c.retryAt).Round(time.Millisecond), "err", err)
}

// list connects when needed and lists every page of tools, keeping at
// most maxTools of them in at most maxBytes (issue 15: 20,000 tools made the
// account's whole list fail): the rest are not read. A tool with an invalid
// name or schema is left out. What was left out, and why, is returned for
// the server's health. Called with mu held.
func (c *extConn) list(ctx context.Context) ([]*extTool, string, []string, error) {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	cs, err := c.connect(ctx)
	if err != nil {
		return nil, "", nil, err
	}
	var out []*extTool
	var dropped droppedTools
	sum := sha256.New()
	size := 0
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, "", nil, fmt.Errorf("listing tools: %w", err)
		}
		if len(out) == c.x.maxTools {
			dropped.add(fmt.Sprintf("the server lists more than %d tools (EXTERNAL_MAX_TOOLS); the rest are left out", c.x.maxTools))
			break
		}
		et, err := c.convert(t)
		if err != nil {
			dropped.add(err.Error()) // logged below with the others, in a bounded line
			continue
		}
		b, _ := json.Marshal(et.tool)
		if size += len(b); size > c.x.maxBytes {
			dropped.add(fmt.Sprintf("the server's tools take more than %d bytes (EXTERNAL_MAX_RESULT_BYTES); the rest are left out", c.x.maxBytes))
			break
		}
		sum.Write(b)
		out = append(out, et)
	}
	if len(dropped.lines) > 0 {
		c.x.log.Warn("an external MCP server's tools are left out in part", "account", c.account, "server", c.spec.name, "dropped", dropped.lines)
	}
	return out, hex.EncodeToString(sum.Sum(nil))[:16], dropped.lines, nil
}

// maxDropped bounds the lines of Health.Dropped.
const maxDropped = 10

// droppedTools collects what a list left out, in at most maxDropped lines.
type droppedTools struct {
	lines []string
	more  int
}

func (d *droppedTools) add(line string) {
	if len(d.lines) < maxDropped {
		d.lines = append(d.lines, line)
		return
	}
	d.more++
	d.lines[maxDropped-1] = fmt.Sprintf("and %d more tools are left out", d.more+1)
}

// convert checks t and makes it a registry tool. Its name must be one MCP
// allows, and its schemas JSON Schema objects: clients refuse a whole list
// over one bad schema (the official TS SDK's listTools() does).
func (c *extConn) convert(t *mcp.Tool) (*extTool, error) {
	if !remoteToolName.MatchString(t.Name) {
		return nil, fmt.Errorf("tool %.130q: the name is not a valid MCP tool name", t.Name)
	}
	rt := registry.Tool{Name: c.spec.name + registry.ToolSeparator + t.Name, Title: t.Title, Description: t.Description,
		Source: "mcp:" + c.spec.name}
	var err error
	if t.InputSchema != nil {
		if rt.InputSchema, err = json.Marshal(t.InputSchema); err != nil {
			return nil, fmt.Errorf("tool %s: encoding its inputSchema: %w", t.Name, err)
		}
		if err := checkObjectSchema(rt.InputSchema); err != nil {
			return nil, fmt.Errorf("tool %s: inputSchema %w", t.Name, err)
		}
	} else {
		rt.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	if t.OutputSchema != nil {
		if rt.OutputSchema, err = json.Marshal(t.OutputSchema); err != nil {
			return nil, fmt.Errorf("tool %s: encoding its outputSchema: %w", t.Name, err)
		}
		if err := checkObjectSchema(rt.OutputSchema); err != nil {
			return nil, fmt.Errorf("tool %s: outputSchema %w", t.Name, err)
		}
	}
	et := &extTool{remote: t.Name, conn: c}
	if t.Annotations != nil {
		if rt.Annotations, err = json.Marshal(t.Annotations); err != nil {
			return nil, fmt.Errorf("tool %s: encoding its annotations: %w", t.Name, err)
		}
		et.retry = t.Annotations.ReadOnlyHint || t.Annotations.IdempotentHint
	}
	et.tool = rt
	return et, nil
}

// connect returns the open session, or opens one. Called with mu held.
func (c *extConn) connect(ctx context.Context) (*mcp.ClientSession, error) {
	if c.session != nil {
		return c.session, nil
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mirobody", Version: buildinfo.Version}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			c.stale.Store(true)
			c.x.changed(c)
		},
	})
	base := c.x.transport
	if c.spec.oauth != nil {
		if c.auth == nil {
			c.auth = newOAuthTransport(c.x, c.account, c.spec, c.x.transport)
		}
		base = c.auth
	}
	hc := &http.Client{Transport: &credentials{base: base, headers: c.spec.headers}, CheckRedirect: noRedirects}
	// The SDK detaches the session from this context: it bounds only the
	// handshake, and the session outlives the request.
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	// cappedTransport keeps events within maxBytes; the SDK's own cap is
	// set above it, so that ours (which answers the call) comes first.
	cs, err := client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: c.spec.url, HTTPClient: hc, MaxRetries: 2,
		MaxEventSize: c.x.maxBytes + 4096}, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting: %w", err)
	}
	c.x.log.Debug("connected to an external MCP server", "account", c.account, "server", c.spec.name,
		"protocol", cs.InitializeResult().ProtocolVersion)
	c.session = cs
	return cs, nil
}

// call runs one tool on the server. A lost session is reopened, and the
// call sent again once when the tool says it is read-only or idempotent.
// The call is a client span named as the MCP semantic conventions name
// it; the traceparent is not sent to the server (design.md "Tracing").
func (c *extConn) call(ctx context.Context, t *extTool, args json.RawMessage) (resp *registry.CallResponse, err error) {
	c.touch()
	ctx, span := c.x.tracer.Start(ctx, "tools/call "+t.remote, trace.WithSpanKind(trace.SpanKindClient))
	defer func() {
		switch {
		case err != nil:
			span.SetStatus(codes.Error, err.Error())
			span.SetAttributes(attribute.String("error.type", string(wire.CodeOf(err))))
		case resp.IsError:
			span.SetStatus(codes.Error, "tool_error")
			span.SetAttributes(attribute.String("error.type", "tool_error"))
		}
		span.End()
	}()
	if span.IsRecording() {
		span.SetAttributes(attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", t.remote), attribute.String("mirobody.mcp.server", c.spec.name))
		if u, perr := url.Parse(c.spec.url); perr == nil {
			span.SetAttributes(attribute.String("server.address", u.Hostname()))
		}
	}
	for attempt := 0; ; attempt++ {
		c.mu.Lock()
		var cs *mcp.ClientSession
		err := errDown
		if !c.closed && !time.Now().Before(c.retryAt) {
			cs, err = c.connect(ctx)
			if err != nil {
				c.fail(err)
			}
		}
		c.mu.Unlock()
		if err != nil {
			return textResult(fmt.Sprintf("%s failed: MCP server %s is unavailable", t.tool.Name, c.spec.name), true), nil
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: t.remote, Arguments: args})
		if err == nil {
			return convertResult(res)
		}
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) {
			return textResult(fmt.Sprintf("%s failed: %s", t.tool.Name, rpcErr.Message), true), nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		lost := errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, mcp.ErrSessionMissing)
		c.mu.Lock()
		if c.session == cs {
			_ = cs.Close()
			c.session = nil
			if !lost {
				c.fail(err)
			}
		}
		c.mu.Unlock()
		if !lost || !t.retry || attempt > 0 {
			c.x.log.WarnContext(ctx, "external MCP tool call failed", "tool", t.tool.Name, "err", err)
			return textResult(fmt.Sprintf("%s failed: the MCP server %s did not answer", t.tool.Name, c.spec.name), true), nil
		}
	}
}

func convertResult(res *mcp.CallToolResult) (*registry.CallResponse, error) {
	out := &registry.CallResponse{Content: make([]json.RawMessage, 0, len(res.Content)), IsError: res.IsError}
	for _, block := range res.Content {
		b, err := json.Marshal(block)
		if err != nil {
			return nil, fmt.Errorf("encoding an external tool result: %w", err)
		}
		out.Content = append(out.Content, b)
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("encoding an external tool result: %w", err)
		}
		out.StructuredContent = b
	}
	return out, nil
}

// snapshotHealth returns what is known of the server's health.
func (c *extConn) snapshotHealth() registry.Health {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.health.Status == "" {
		return registry.Health{Status: registry.HealthUnknown}
	}
	return c.health
}

// close ends the session; the connection is not used again.
func (c *extConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.session != nil {
		_ = c.session.Close()
		c.session = nil
	}
}
