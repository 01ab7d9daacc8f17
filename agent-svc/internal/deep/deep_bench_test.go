package deep

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/agent-svc/internal/turn"
	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
)

const benchSteps = 10

// benchProviderEnv makes TestBenchProvider serve the benchmark's provider.
const benchProviderEnv = "DEEP_BENCH_PROVIDER"

// BenchmarkLoopStep measures the loop's own cost per step: a zero-latency
// scripted provider over loopback HTTP+SSE (through the real SDK client)
// and a Go built-in tool (write_todos).
//
// The provider runs in a child process (this test binary again, as
// TestBenchProvider), so that neither its CPU nor its garbage is counted
// as ours: cpu-ms/step is this process's CPU time (user and system) per
// step, which is the loop, encoding the request, the HTTP client and
// decoding the SSE stream; on a shared machine it is steadier than the
// wall times. The provider's wall time is everything on its side of the
// socket: srv.Busy counts each request from its first byte read to the
// last byte of the response written (net/http included), and
// client-ms/step is the elapsed time without it. Our decoding of an event
// that overlaps the server writing the next one is not in client-ms/step,
// as it overlaps the model's streaming against a real provider; it is in
// cpu-ms/step.
func BenchmarkLoopStep(b *testing.B) {
	for _, format := range []string{scripted.FormatOpenAI, scripted.FormatAnthropic} {
		b.Run(format, func(b *testing.B) {
			base, busy := startBenchProvider(b, format)
			var p llm.Provider = llm.NewOpenAI(llm.ClientOptions{BaseURL: base, APIKey: "k"})
			if format == scripted.FormatAnthropic {
				p = llm.NewAnthropic(llm.ClientOptions{BaseURL: base, APIKey: "k"})
			}
			a := New(Options{Log: slog.New(slog.DiscardHandler)})
			b.ReportAllocs()
			busy0, cpu0 := busy(), cpuTime(b)
			b.ResetTimer()
			for b.Loop() {
				out, err := a.Run(context.Background(), &turn.Turn{AccountID: "a", SessionID: "s", Question: "go", Provider: p, Model: "m", Emit: func(agent.Event) {}})
				if err != nil || out.Finish != agent.FinishStop {
					b.Fatal(err, out)
				}
			}
			b.StopTimer()
			steps := float64(b.N * benchSteps)
			perStep := func(d time.Duration) float64 { return float64(d.Microseconds()) / steps / 1000 }
			provider := busy() - busy0
			b.ReportMetric(perStep(b.Elapsed()), "ms/step")
			b.ReportMetric(perStep(provider), "provider-ms/step")
			b.ReportMetric(perStep(b.Elapsed()-provider), "client-ms/step")
			b.ReportMetric(perStep(cpuTime(b)-cpu0), "cpu-ms/step")
		})
	}
}

// benchResponder calls write_todos benchSteps-1 times, then answers.
func benchResponder(r *scripted.Received) (scripted.Step, error) {
	if r.StepsSinceUser() < benchSteps-1 {
		return scripted.Step{Calls: []scripted.Call{{Name: "write_todos", Args: `{"todos":[{"content":"step","status":"in_progress"}]}`}}}, nil
	}
	return scripted.Step{Text: "done"}, nil
}

// startBenchProvider starts TestBenchProvider in a child process and
// returns the base URL for format and a function reading its Busy.
func startBenchProvider(b *testing.B, format string) (string, func() time.Duration) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchProvider$")
	cmd.Env = append(os.Environ(), benchProviderEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		in.Close() // the child exits at the end of its input
		_ = cmd.Wait()
	})
	out := bufio.NewScanner(outPipe)
	line := func() string {
		if !out.Scan() {
			b.Fatalf("the benchmark's provider process ended: %v", out.Err())
		}
		return out.Text()
	}
	openaiURL, anthropicURL := line(), line()
	busy := func() time.Duration {
		if _, err := fmt.Fprintln(in, "busy"); err != nil {
			b.Fatal(err)
		}
		ns, err := strconv.ParseInt(line(), 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		return time.Duration(ns)
	}
	if format == scripted.FormatAnthropic {
		return anthropicURL, busy
	}
	return openaiURL, busy
}

// TestBenchProvider is BenchmarkLoopStep's provider process: it prints the
// server's base URLs, answers each "busy" line on stdin with srv.Busy in
// nanoseconds, and ends with its input. It does nothing in a plain test
// run.
func TestBenchProvider(t *testing.T) {
	if os.Getenv(benchProviderEnv) == "" {
		t.Skip("the benchmark's provider process only")
	}
	srv := scripted.New(benchResponder)
	t.Cleanup(srv.Close)
	fmt.Println(srv.OpenAIBaseURL())
	fmt.Println(srv.AnthropicBaseURL())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		fmt.Println(srv.Busy().Nanoseconds())
	}
}

// cpuTime is this process's CPU time so far, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
