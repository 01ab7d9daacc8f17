package stack

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
)

// otlpReceiver is an in-process OTLP/HTTP trace collector: it decodes the
// protobuf export requests on /v1/traces and keeps every span.
type otlpReceiver struct {
	URL   string
	mu    sync.Mutex
	spans []*span
}

// span is one received span with its service.name.
type span struct {
	service string
	*tracepb.Span
}

func (s *span) id() string     { return hex.EncodeToString(s.SpanId) }
func (s *span) parent() string { return hex.EncodeToString(s.ParentSpanId) }
func (s *span) trace() string  { return hex.EncodeToString(s.TraceId) }

// attr is the span's attribute k as a string ("" when absent); an array
// reads as its values joined by commas.
func (s *span) attr(k string) string { return attrValue(s.Attributes, k) }

func attrValue(attrs []*commonpb.KeyValue, k string) string {
	for _, a := range attrs {
		if a.Key != k {
			continue
		}
		if arr := a.GetValue().GetArrayValue(); arr != nil {
			var vs []string
			for _, v := range arr.Values {
				vs = append(vs, v.GetStringValue())
			}
			return strings.Join(vs, ",")
		}
		switch v := a.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			return v.StringValue
		case *commonpb.AnyValue_IntValue:
			return fmt.Sprint(v.IntValue)
		case *commonpb.AnyValue_BoolValue:
			return fmt.Sprint(v.BoolValue)
		case *commonpb.AnyValue_DoubleValue:
			return fmt.Sprint(v.DoubleValue)
		}
	}
	return ""
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		var ex coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(b, &ex)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range ex.ResourceSpans {
			service := attrValue(rs.GetResource().GetAttributes(), "service.name")
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					r.spans = append(r.spans, &span{service: service, Span: s})
				}
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// traceOf returns the spans of the trace that holds a span named name
// whose root span is named root, indexed by span id ("" when none is
// complete yet: every span's parent must have arrived).
func (r *otlpReceiver) traceOf(name, root string) map[string]*span {
	r.mu.Lock()
	defer r.mu.Unlock()
	byTrace := map[string]map[string]*span{}
	for _, s := range r.spans {
		if byTrace[s.trace()] == nil {
			byTrace[s.trace()] = map[string]*span{}
		}
		byTrace[s.trace()][s.id()] = s
	}
traces:
	for _, spans := range byTrace {
		found, rooted := false, false
		for _, s := range spans {
			switch {
			case s.parent() == "" && s.Name == root:
				rooted = true
			case s.parent() != "" && spans[s.parent()] == nil:
				continue traces
			}
			found = found || s.Name == name
		}
		if found && rooted {
			return spans
		}
	}
	return nil
}

// chain is s's span names and services from s up to its root.
func chain(spans map[string]*span, s *span) []string {
	var out []string
	for ; s != nil; s = spans[s.parent()] {
		out = append(out, s.service+":"+s.Name)
	}
	return out
}

func named(spans map[string]*span, name string) []*span {
	var out []*span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// TestTracesEndToEnd: with OTEL_EXPORTER_OTLP_ENDPOINT set, an MCP
// tools/call of a Python tool is one trace from the gateway's HTTP span
// through registry-svc to the tool host's run; and a Deep chat turn is one
// trace from POST /api/chat through the turn, every model call (GenAI
// attributes) and every agent tool, the tool js_eval calls a child of
// js_eval and running in the tool host; an external server's tool call is
// a client span; a Base turn's provider-run loop is one model call span.
func TestTracesEndToEnd(t *testing.T) {
	recv := newOTLPReceiver(t)
	// Export within milliseconds rather than the batcher's 5 s default.
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		if r.MCP != nil {
			return scripted.Step{Text: "base answer", InputTokens: 8, OutputTokens: 2}, nil
		}
		if r.LastUser() == "plan it" {
			return scripted.Step{Text: "the plan", InputTokens: 3, OutputTokens: 2}, nil
		}
		switch r.StepsSinceUser() {
		case 0:
			return scripted.Step{Calls: []scripted.Call{{Name: "write_todos", Args: `{"todos":[{"content":"add","status":"in_progress"}]}`},
				{Name: "write_file", Args: `{"file_path":"/notes/a.md","content":"a"}`},
				{Name: "task", Args: `{"description":"plan it"}`}}, InputTokens: 10, OutputTokens: 4}, nil
		case 1:
			return scripted.Step{Calls: []scripted.Call{{Name: "js_eval", Args: `{"code":"const r = await tools.add({a: 1, b: 2}); return r"}`}}}, nil
		}
		return scripted.Step{Text: "3", InputTokens: 20, OutputTokens: 1}, nil
	})
	t.Cleanup(srv.Close)
	addr := servicetest.FreeAddr(t)
	st := startChatStack(t, srv, func(c *conf.Config) {
		c.OTLPEndpoint, c.MCPClientAllowPriv = recv.URL, true
		c.HTTPAddr, c.MCPPublicURL = addr, "http://"+addr
		c.ProvidersBase = map[string]conf.Provider{"oa": {Type: "openai-responses", Model: "gpt-test", BaseURL: srv.OpenAIBaseURL()}}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("mcp tools/call", func(t *testing.T) {
		cs := mcpSession(t, st.URL+"/mcp", st.Key)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 3}})
		if err != nil || res.IsError {
			t.Fatalf("calling add: %+v %v", res, err)
		}
		var spans map[string]*span
		servicetest.Eventually(t, 10*time.Second, func() bool { spans = recv.traceOf("pyhost add", "POST /mcp"); return spans != nil },
			"a trace from POST /mcp to the tool host")
		host := named(spans, "pyhost add")[0]
		got := strings.Join(chain(spans, host), " < ")
		for _, want := range []string{"registry:pyhost add < registry:tool add < registry:registry.tools.call < gateway:registry.tools.call", "< gateway:POST /mcp"} {
			if !strings.Contains(got, want) {
				t.Errorf("span chain %s lacks %s", got, want)
			}
		}
		if host.attr("mirobody.tool.outcome") != "ok" || host.attr("mirobody.pyhost.worker") == "" || host.attr("mirobody.pyhost.run_ms") == "" {
			t.Errorf("tool host span attributes: %v", host.Attributes)
		}
	})

	t.Run("external tools/call", func(t *testing.T) {
		weather := servicetest.NewMCPServer(t, servicetest.MCPServerOptions{})
		textTool(weather, "forecast", "sunny in ")
		if code, body := apiJSON(t, http.MethodPost, st.URL+"/api/mcp-servers", st.Key, map[string]any{"name": "weather", "url": weather.URL}); code != http.StatusCreated {
			t.Fatalf("adding the external server: %d %s", code, body)
		}
		cs := mcpSession(t, st.URL+"/mcp", st.Key)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "weather__forecast", Arguments: map[string]any{"text": "Paris"}})
		if err != nil || res.IsError {
			t.Fatalf("calling weather__forecast: %+v %v", res, err)
		}
		var spans map[string]*span
		servicetest.Eventually(t, 10*time.Second, func() bool { spans = recv.traceOf("tools/call forecast", "POST /mcp"); return spans != nil },
			"a trace from POST /mcp to the external server")
		call := named(spans, "tools/call forecast")[0]
		if got := strings.Join(chain(spans, call), " < "); !strings.Contains(got, "registry:tools/call forecast < registry:tool weather__forecast") ||
			call.Kind != tracepb.Span_SPAN_KIND_CLIENT || call.attr("mcp.method.name") != "tools/call" || call.attr("server.address") != "127.0.0.1" {
			t.Errorf("external call span %s: %v", got, call.Attributes)
		}
	})

	t.Run("chat turn", func(t *testing.T) {
		evs := st.chat(t, map[string]any{"question": "add 1 and 2", "agent": "deep", "provider": "oa"})
		if finishOf(evs) != agent.FinishStop {
			t.Fatalf("turn events: %+v", evs)
		}
		var spans map[string]*span
		// The turn's span ends after its last event: wait for the whole trace.
		servicetest.Eventually(t, 10*time.Second, func() bool {
			spans = recv.traceOf("invoke_agent deep", "POST /api/chat")
			return spans != nil && len(named(spans, "pyhost add")) == 1
		}, "a trace from POST /api/chat through the turn")
		turn := named(spans, "invoke_agent deep")[0]
		if turn.service != "agent" || turn.attr("gen_ai.operation.name") != "invoke_agent" || turn.attr("mirobody.finish") != "stop" {
			t.Errorf("turn span: %s %v", turn.service, turn.Attributes)
		}
		models := named(spans, "chat gpt-test")
		if len(models) != 4 {
			t.Fatalf("%d model call spans, want 4 (three steps and the subagent's)", len(models))
		}
		for _, m := range models {
			for k, want := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.system": "openai",
				"gen_ai.request.model": "gpt-test", "gen_ai.response.model": "gpt-test"} {
				if got := m.attr(k); got != want {
					t.Errorf("model span %s = %q, want %q", k, got, want)
				}
			}
			if m.attr("gen_ai.usage.input_tokens") == "" || m.attr("gen_ai.usage.output_tokens") == "" || m.attr("gen_ai.response.finish_reasons") == "" ||
				m.Kind != tracepb.Span_SPAN_KIND_CLIENT {
				t.Errorf("model span lacks usage or finish reasons: %v", m.Attributes)
			}
		}
		tools := map[string]*span{}
		for _, name := range []string{"write_todos", "write_file", "task", "js_eval", "add"} {
			ss := named(spans, "execute_tool "+name)
			if len(ss) != 1 {
				t.Fatalf("%d execute_tool %s spans, want 1", len(ss), name)
			}
			tools[name] = ss[0]
			if ss[0].attr("gen_ai.tool.name") != name || ss[0].attr("gen_ai.operation.name") != "execute_tool" {
				t.Errorf("tool span %s: %v", name, ss[0].Attributes)
			}
		}
		for _, name := range []string{"write_todos", "write_file", "task", "js_eval"} {
			if tools[name].parent() != turn.id() {
				t.Errorf("execute_tool %s is under %v, want the turn", name, chain(spans, tools[name]))
			}
		}
		if tools["add"].parent() != tools["js_eval"].id() || tools["add"].attr("mirobody.tool.from_js") != "true" {
			t.Errorf("the call js_eval made is under %v, want js_eval", chain(spans, tools["add"]))
		}
		host := named(spans, "pyhost add")[0]
		if got := strings.Join(chain(spans, host), " < "); !strings.Contains(got, "registry:tool add < registry:registry.tools.call < agent:registry.tools.call < agent:execute_tool add < agent:execute_tool js_eval") {
			t.Errorf("tool host span chain: %s", got)
		}
		var sub int
		for _, m := range models {
			if m.parent() == tools["task"].id() {
				sub++
			}
		}
		if sub != 1 {
			t.Errorf("%d model calls under the task span, want the subagent's one", sub)
		}
	})

	t.Run("base turn", func(t *testing.T) {
		evs := st.chat(t, map[string]any{"question": "hi", "agent": "base", "provider": "oa"})
		if finishOf(evs) != agent.FinishStop {
			t.Fatalf("turn events: %+v", evs)
		}
		var spans map[string]*span
		servicetest.Eventually(t, 10*time.Second, func() bool {
			spans = recv.traceOf("invoke_agent base", "POST /api/chat")
			return spans != nil && len(named(spans, "chat gpt-test")) == 1
		}, "a trace from POST /api/chat through the Base turn")
		turn, model := named(spans, "invoke_agent base")[0], named(spans, "chat gpt-test")[0]
		if model.parent() != turn.id() || model.attr("gen_ai.provider.name") != "openai" || model.attr("gen_ai.usage.output_tokens") != "2" ||
			model.attr("gen_ai.response.model") != "gpt-test" {
			t.Errorf("Base model call span under %v: %v", chain(spans, model), model.Attributes)
		}
	})
}
