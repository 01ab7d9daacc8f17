package pyhost

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/registry-svc/internal/sandbox"
)

// benchHost runs op against one host at c=1 and reports its p50 and p99
// beside ns/op: the round trip Go → host → Go, which is what a Python
// tool adds over a Go built-in (registry-svc's BenchmarkCallPython minus
// BenchmarkCallGoBuiltin, less the registry's own work).
func benchHost(b *testing.B, sandboxed bool, op func(context.Context, *Pool) error) {
	dir, err := filepath.Abs("../../testdata/calls")
	if err != nil {
		b.Fatal(err)
	}
	opts := Options{Workers: 1, Dirs: []string{dir}}
	if sandboxed {
		sb, err := sandbox.New(context.Background(), sandbox.Options{Python: Interpreter(""), Dirs: opts.Dirs})
		if err != nil {
			b.Skipf("this host cannot sandbox Python tools: %v", err)
		}
		opts.Sandbox = sb
	}
	p, _, _ := startPool(b, opts)
	ctx := context.Background()
	for range 100 { // warm up the host's threads
		if err := callEcho(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		began := time.Now()
		if err := op(ctx, p); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(began))
	}
	b.StopTimer()
	reportMedian(b, lat, "p50-µs")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// reportMedian reports the median of d in µs as metric unit.
func reportMedian(b *testing.B, d []time.Duration, unit string) {
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds())/1e3, unit)
}

// callEcho calls the plain function echo, the path most tools take.
func callEcho(ctx context.Context, p *Pool) error {
	r, err := p.CallWith(ctx, "echo", json.RawMessage(`{"text":"ping"}`), &CallOptions{})
	if err == nil && r.IsError {
		return errors.New("echo failed")
	}
	return err
}

// BenchmarkHostCall is one call of a trivial plain function through one
// host, unconfined and sandboxed.
func BenchmarkHostCall(b *testing.B) {
	b.Run("plain", func(b *testing.B) { benchHost(b, false, callEcho) })
	b.Run("sandboxed", func(b *testing.B) { benchHost(b, true, callEcho) })
}

// BenchmarkHostPing is the host's protocol round trip through its reader
// and event loop, without a tool.
func BenchmarkHostPing(b *testing.B) {
	benchHost(b, false, func(ctx context.Context, p *Pool) error {
		w, release, err := p.acquire(ctx)
		if err != nil {
			return err
		}
		defer release()
		_, err = w.request(ctx, &message{Op: "ping"}, false, callHooks{})
		return err
	})
}

// BenchmarkHostLegs splits a traced call of echo into its legs, from the
// host's own timing (trace.go): Go's write until the host has decoded the
// request (send), the hand-off to the tool's thread (handoff: the host's
// queue_ms plus thread_wait_ms), the tool and the encoding of its reply
// (run), and the reply's way back until Go has decoded it (reply).
func BenchmarkHostLegs(b *testing.B) {
	var send, handoff, run, reply []time.Duration
	benchHost(b, false, func(ctx context.Context, p *Pool) error {
		w, release, err := p.acquire(ctx)
		if err != nil {
			return err
		}
		defer release()
		m := &message{Op: "call", Name: "echo", Args: json.RawMessage(`{"text":"ping"}`),
			Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
		sent := time.Now().UnixNano()
		r, err := w.request(ctx, m, true, callHooks{})
		back := time.Now().UnixNano()
		if err != nil {
			return err
		}
		t := r.Timing
		send = append(send, time.Duration(t.ReceivedNS-sent))
		handoff = append(handoff, time.Duration(t.RunNS-t.ReceivedNS))
		run = append(run, time.Duration(t.EndedNS-t.RunNS))
		reply = append(reply, time.Duration(back-t.EndedNS))
		return nil
	})
	reportMedian(b, send, "send-µs")
	reportMedian(b, handoff, "handoff-µs")
	reportMedian(b, run, "run-µs")
	reportMedian(b, reply, "reply-µs")
}
