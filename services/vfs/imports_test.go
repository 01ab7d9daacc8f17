package vfs

import (
	"strings"
	"testing"
)

type chunk struct {
	seq, first int64
	data       string
}

func collect(t *testing.T, in string, max int, csvQuotes bool) []chunk {
	t.Helper()
	var out []chunk
	err := chunkLines(strings.NewReader(in), max, csvQuotes, func(seq, first int64, data []byte) error {
		out = append(out, chunk{seq, first, string(data)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestChunkLines(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		max       int
		csvQuotes bool
		want      []chunk
	}{
		{"empty", "", 10, false, nil},
		{"one chunk", "a\nb\n", 10, false, []chunk{{0, 1, "a\nb\n"}}},
		{"split at lines", "aaaa\nbbbb\ncccc\nd", 8, false, []chunk{{0, 1, "aaaa\nbbbb\n"}, {1, 3, "cccc\nd"}}},
		{"long line alone", strings.Repeat("x", 20) + "\ny\n", 8, false, []chunk{{0, 1, strings.Repeat("x", 20) + "\n"}, {1, 2, "y\n"}}},
		{"quoted newline kept", "\"a\nb\",1\nc,2\nd,3\n", 4, true, []chunk{{0, 1, "\"a\nb\",1\n"}, {1, 3, "c,2\n"}, {2, 4, "d,3\n"}}},
		{"quotes ignored outside CSV", "\"a\nb\n", 2, false, []chunk{{0, 1, "\"a\n"}, {1, 2, "b\n"}}},
	}
	for _, tt := range tests {
		got := collect(t, tt.in, tt.max, tt.csvQuotes)
		if len(got) != len(tt.want) {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%s: chunk %d = %+v, want %+v", tt.name, i, got[i], tt.want[i])
			}
		}
	}
	// Chunks reassemble the input exactly, whatever the size.
	var b strings.Builder
	for i := range 5000 {
		b.WriteString(strings.Repeat("z", i%97) + "\n")
	}
	var again strings.Builder
	for _, c := range collect(t, b.String(), 1000, false) {
		again.WriteString(c.data)
	}
	if again.String() != b.String() {
		t.Error("chunks do not reassemble the input")
	}
}

func TestJSONArrayToLines(t *testing.T) {
	var out strings.Builder
	err := jsonArrayToLines(strings.NewReader(`[ {"a": 1,
		"b": "x\ny"}, {"c": [1, 2]} ]`), &out)
	if err != nil || out.String() != "{\"a\":1,\"b\":\"x\\ny\"}\n{\"c\":[1,2]}\n" {
		t.Errorf("got %q, %v", out.String(), err)
	}
	for _, bad := range []string{`{"a":1}`, `[{"a":1}`, `[{"a":}]`, ``} {
		if err := jsonArrayToLines(strings.NewReader(bad), &strings.Builder{}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
