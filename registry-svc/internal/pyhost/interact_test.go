package pyhost

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mirobody/mirobody-go/services/registry"
)

func TestToolLogs(t *testing.T) {
	p, _, _ := startPool(t, Options{Workers: 1}, "../../testdata/interact")
	tests := []struct {
		name, tool, level string
		inputs            map[string]json.RawMessage
		replay            []string
		want              []registry.LogRecord
		text              string
	}{
		{name: "debug", tool: "chatty", level: "debug", text: "sent True", want: []registry.LogRecord{
			{Level: "debug", Logger: "asking", Data: json.RawMessage(`"debug line"`)},
			{Level: "info", Logger: "asking", Data: json.RawMessage(`"info line"`)},
			{Level: "notice", Data: json.RawMessage(`{"data":{"n":1},"message":"notice line"}`)},
			{Level: "error", Logger: "asking", Data: json.RawMessage(`"error line"`)},
		}},
		{name: "warning and above", tool: "chatty", level: "warning", text: "sent False", want: []registry.LogRecord{
			{Level: "error", Logger: "asking", Data: json.RawMessage(`"error line"`)},
		}},
		{name: "none asked", tool: "chatty", text: "sent False"},
		{name: "replayed up to the answer", tool: "noted", level: "info", text: "noted", replay: []string{"ok"},
			inputs: map[string]json.RawMessage{"ok": json.RawMessage(`{"action":"accept","content":{"ok":true}}`)},
			want:   []registry.LogRecord{{Level: "info", Logger: "asking", Data: json.RawMessage(`"after"`)}}},
		{name: "answers without replay", tool: "noted", level: "info", text: "noted",
			inputs: map[string]json.RawMessage{"ok": json.RawMessage(`{"action":"accept","content":{"ok":true}}`)},
			want: []registry.LogRecord{{Level: "info", Logger: "asking", Data: json.RawMessage(`"before"`)},
				{Level: "info", Logger: "asking", Data: json.RawMessage(`"after"`)}}},
		{name: "async", tool: "chatty_async", level: "info", text: "done", want: []registry.LogRecord{
			{Level: "info", Logger: "asking", Data: json.RawMessage(`"async info"`)},
			{Level: "warning", Logger: "asking", Data: json.RawMessage(`"async warning"`)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []registry.LogRecord
			var progress []float64
			r, err := p.CallWith(context.Background(), tt.tool, json.RawMessage(`{}`), &CallOptions{LogLevel: tt.level,
				Capabilities: []string{"elicitation"}, Inputs: tt.inputs, Replay: tt.replay,
				Log:      func(rec *registry.LogRecord) { mu.Lock(); got = append(got, *rec); mu.Unlock() },
				Progress: func(p, _ float64, _ string) { mu.Lock(); progress = append(progress, p); mu.Unlock() }})
			if err != nil {
				t.Fatal(err)
			}
			if text := resultText(t, r); text != tt.text {
				t.Errorf("result %q, want %q", text, tt.text)
			}
			mu.Lock()
			defer mu.Unlock()
			if tt.tool == "noted" && (len(progress) == 1) == (tt.replay != nil) {
				t.Errorf("progress %v with replay %v", progress, tt.replay)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("logs %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i].Level != tt.want[i].Level || got[i].Logger != tt.want[i].Logger || !jsonEqual(got[i].Data, tt.want[i].Data) {
					t.Errorf("log %d = %s %s %s, want %+v", i, got[i].Level, got[i].Logger, got[i].Data, tt.want[i])
				}
			}
		})
	}
}

func TestToolAsks(t *testing.T) {
	p, _, _ := startPool(t, Options{Workers: 1}, "../../testdata/interact")
	elicit := []string{"elicitation"}
	name := json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)
	tests := []struct {
		name, tool, args string
		caps             []string
		inputs           map[string]json.RawMessage
		asks             string // the InputRequests as JSON, or "" for a result
		text, missing    string
	}{
		{name: "first question", tool: "greet", caps: elicit,
			asks: `{"elicitation-1":{"method":"elicitation/create","params":{"message":"Your name?","requestedSchema":{"properties":{"name":{"type":"string"}},"type":"object"}}}}`},
		{name: "second question", tool: "greet", caps: elicit, inputs: map[string]json.RawMessage{"elicitation-1": name},
			asks: `{"elicitation-2":{"method":"elicitation/create","params":{"message":"Your colour?","requestedSchema":{"properties":{"colour":{"type":"string"}},"type":"object"}}}}`},
		{name: "answered", tool: "greet", caps: elicit, inputs: map[string]json.RawMessage{"elicitation-1": name,
			"elicitation-2": json.RawMessage(`{"action":"accept","content":{"colour":"green"}}`)}, text: "Ada likes green"},
		{name: "sampling, async", tool: "summarise", args: `{"text":"long"}`, caps: []string{"sampling"},
			asks: `{"summary":{"method":"sampling/createMessage","params":{"maxTokens":50,"messages":[{"content":{"text":"Summarise: long","type":"text"},"role":"user"}]}}}`},
		{name: "sampled, async", tool: "summarise", args: `{"text":"long"}`, caps: []string{"sampling"},
			inputs: map[string]json.RawMessage{"summary": json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"short"},"model":"m"}`)},
			text:   "summary: short"},
		{name: "capability caught", tool: "maybe_ask", caps: []string{"sampling"}, text: "no elicitation"},
		{name: "capability not caught", tool: "greet", text: "greet failed: the MCP client does not support elicitation",
			missing: "elicitation"},
		{name: "pause is not an Exception", tool: "must_sample", caps: []string{"sampling"},
			asks: `{"sampling-1":{"method":"sampling/createMessage","params":{"maxTokens":1000,"messages":[{"content":{"text":"hi","type":"text"},"role":"user"}]}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if args == "" {
				args = `{}`
			}
			r, err := p.CallWith(context.Background(), tt.tool, json.RawMessage(args), &CallOptions{Capabilities: tt.caps, Inputs: tt.inputs})
			if err != nil {
				t.Fatal(err)
			}
			if tt.asks != "" {
				got, _ := json.Marshal(r.InputRequests)
				if !jsonEqual(got, []byte(tt.asks)) || len(r.Content) != 0 {
					t.Errorf("input requests %s content %s, want %s", got, r.Content, tt.asks)
				}
				return
			}
			if text := resultText(t, r); text != tt.text || r.MissingCapability != tt.missing || r.InputRequests != nil {
				t.Errorf("result %q missing %q asks %v, want %q missing %q", text, r.MissingCapability, r.InputRequests, tt.text, tt.missing)
			}
		})
	}
}

// TestTracedAsks: a traced call that asks, on the host's direct path (a
// plain function) and on its event loop (a coroutine), sends its log
// records and questions, and its reply carries the host's timing (the span
// has the tool's run time), as a traced result does.
func TestTracedAsks(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tracer := tp.Tracer("test")
	p, _, _ := startPool(t, Options{Workers: 1, Tracer: tracer}, "../../testdata/interact")
	tests := []struct {
		tool, args, caps, asks string
	}{
		{"greet", `{}`, "elicitation", "elicitation-1"},
		{"summarise", `{"text":"long"}`, "sampling", "summary"},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			ctx, parent := tracer.Start(context.Background(), "tool "+tt.tool)
			r, err := p.CallWith(ctx, tt.tool, json.RawMessage(tt.args), &CallOptions{Capabilities: []string{tt.caps}})
			parent.End()
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := r.InputRequests[tt.asks]; !ok || len(r.InputRequests) != 1 {
				t.Errorf("input requests %v, want %s", r.InputRequests, tt.asks)
			}
			var span sdktrace.ReadOnlySpan
			for _, s := range rec.Ended() {
				if s.Name() == "pyhost "+tt.tool {
					span = s
				}
			}
			if span == nil {
				t.Fatalf("no span pyhost %s", tt.tool)
			}
			timed := false
			for _, a := range span.Attributes() {
				timed = timed || a.Key == "mirobody.pyhost.run_ms"
			}
			if !timed {
				t.Errorf("span attributes %v: no host timing with the reply", span.Attributes())
			}
		})
	}
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(a, b []byte) bool {
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal(b, &vb) == nil && reflect.DeepEqual(va, vb)
}

// resultText is the text of a result's one text block.
func resultText(t *testing.T, r *registry.CallResponse) string {
	t.Helper()
	var block struct{ Text string }
	if len(r.Content) != 1 || json.Unmarshal(r.Content[0], &block) != nil {
		t.Fatalf("result %s: want one text block", r.Content)
	}
	return block.Text
}
