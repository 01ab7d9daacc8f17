package pyhost

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestRequestFraming: the host reads its requests buffered, so a line is
// a request however the pipe delivers it: several in one write, one split
// across writes (the host used to read a byte per system call, about
// 100 µs of every call).
func TestRequestFraming(t *testing.T) {
	p, _, _ := startPool(t, Options{Workers: 1}, "../../testdata/calls")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := p.pick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Ids far from the worker's own, with their reply channels.
	expect := func(ids ...int64) map[int64]chan *message {
		chans := map[int64]chan *message{}
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, id := range ids {
			chans[id] = make(chan *message, 1)
			w.pending[id] = chans[id]
		}
		return chans
	}
	write := func(s string) {
		t.Helper()
		w.wmu.Lock()
		defer w.wmu.Unlock()
		if _, err := w.in.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	line := func(id int64) string {
		return fmt.Sprintf(`{"id":%d,"op":"call","name":"echo","args":{"text":"n%d"}}`+"\n", id, id)
	}
	tests := []struct {
		name   string
		ids    []int64
		writes func(lines []string) []string
	}{
		{"three lines in one write", []int64{1 << 40, 1<<40 + 1, 1<<40 + 2}, func(l []string) []string { return []string{strings.Join(l, "")} }},
		{"one line in three writes", []int64{1<<40 + 3}, func(l []string) []string { return []string{l[0][:5], l[0][5:20], l[0][20:]} }},
		{"a line and a half, then the rest", []int64{1<<40 + 4, 1<<40 + 5}, func(l []string) []string {
			both := l[0] + l[1]
			cut := len(l[0]) + 7
			return []string{both[:cut], both[cut:]}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			chans := expect(tc.ids...)
			var lines []string
			for _, id := range tc.ids {
				lines = append(lines, line(id))
			}
			for _, s := range tc.writes(lines) {
				write(s)
			}
			for _, id := range tc.ids {
				select {
				case r := <-chans[id]:
					if r.Result == nil || len(r.Result.Content) != 1 || !strings.Contains(string(r.Result.Content[0]), fmt.Sprintf("n%d", id)) {
						t.Errorf("reply to %d: %+v", id, r)
					}
				case <-ctx.Done():
					t.Fatalf("no reply to %d", id)
				}
			}
		})
	}
}
