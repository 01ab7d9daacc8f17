package wire_test

import (
	"context"
	"testing"

	"github.com/mirobody/mirobody-go/services/servicetest"
)

// BenchmarkCall is one plain request/reply through wire: the fast path
// that liveness must keep cheap (design.md, "Liveness").
func BenchmarkCall(b *testing.B) {
	url := servicetest.NATS(b)
	startEcho(b, url, nil, nil)
	c := servicetest.Client(b, url)
	ctx := context.Background()
	req := &echoReq{Text: "hi"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := echo.Call(ctx, c, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallParallel is the same call from many goroutines at once.
func BenchmarkCallParallel(b *testing.B) {
	url := servicetest.NATS(b)
	startEcho(b, url, nil, nil)
	c := servicetest.Client(b, url)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req := &echoReq{Text: "hi"}
		for pb.Next() {
			if _, err := echo.Call(ctx, c, req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
