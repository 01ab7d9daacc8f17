package deep

import (
	"context"
	"log/slog"
	"testing"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/agent-svc/internal/turn"
	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
)

const benchSteps = 10

// BenchmarkLoopStep measures the loop's own cost per step: a zero-latency
// scripted provider over loopback HTTP+SSE (through the real SDK client)
// and a Go built-in tool (write_todos).
func BenchmarkLoopStep(b *testing.B) {
	for _, format := range []string{scripted.FormatOpenAI, scripted.FormatAnthropic} {
		b.Run(format, func(b *testing.B) {
			srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
				if r.StepsSinceUser() < benchSteps-1 {
					return scripted.Step{Calls: []scripted.Call{{Name: "write_todos", Args: `{"todos":[{"content":"step","status":"in_progress"}]}`}}}, nil
				}
				return scripted.Step{Text: "done"}, nil
			})
			b.Cleanup(srv.Close)
			var p llm.Provider = llm.NewOpenAI(llm.ClientOptions{BaseURL: srv.OpenAIBaseURL(), APIKey: "k"})
			if format == scripted.FormatAnthropic {
				p = llm.NewAnthropic(llm.ClientOptions{BaseURL: srv.AnthropicBaseURL(), APIKey: "k"})
			}
			a := New(Options{Log: slog.New(slog.DiscardHandler)})
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				out, err := a.Run(context.Background(), &turn.Turn{AccountID: "a", SessionID: "s", Question: "go", Provider: p, Model: "m", Emit: func(agent.Event) {}})
				if err != nil || out.Finish != agent.FinishStop {
					b.Fatal(err, out)
				}
			}
			steps := float64(b.N * benchSteps)
			b.ReportMetric(float64(b.Elapsed().Microseconds())/steps/1000, "ms/step")
			// The provider's time is everything on its side of the socket:
			// srv.Busy counts each request from its first byte read to the
			// last byte of the response written (net/http included), not
			// only the handler. What remains is ours: the loop, encoding the
			// request, the HTTP client, decoding the SSE stream, and the
			// waits between the two sides. Our decoding of an event that
			// overlaps the server writing the next one is not counted, as
			// it overlaps the model's streaming against a real provider.
			b.ReportMetric(float64(srv.Busy().Microseconds())/steps/1000, "provider-ms/step")
			b.ReportMetric(float64((b.Elapsed()-srv.Busy()).Microseconds())/steps/1000, "client-ms/step")
		})
	}
}
