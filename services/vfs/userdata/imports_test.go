package userdata

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

type chunk struct {
	seq, first int64
	data       string
	errs       string // "line: message; ..."
}

func collect(t *testing.T, in string, max, line int, csvQuotes bool) []chunk {
	t.Helper()
	var out []chunk
	err := chunkLines(strings.NewReader(in), max, line, csvQuotes, func(c *ImportChunkRequest) error {
		var errs []string
		for _, e := range c.LineErrors {
			errs = append(errs, fmt.Sprintf("%d: %s", e.Line, e.Message))
		}
		out = append(out, chunk{c.Seq, c.FirstLine, string(c.Data), strings.Join(errs, "; ")})
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
		max, line int
		csvQuotes bool
		want      []chunk
	}{
		{"empty", "", 10, 10, false, nil},
		{"one chunk", "a\nb\n", 10, 10, false, []chunk{{0, 1, "a\nb\n", ""}}},
		{"split at lines", "aaaa\nbbbb\ncccc\nd", 10, 10, false, []chunk{{0, 1, "aaaa\nbbbb\n", ""}, {1, 3, "cccc\nd", ""}}},
		{"never over max", "aaaa\nbbbb\ncc\n", 9, 9, false, []chunk{{0, 1, "aaaa\n", ""}, {1, 2, "bbbb\ncc\n", ""}}},
		{"long line is one error", "a\n" + strings.Repeat("x", 20) + "\ny\n", 8, 8, false,
			[]chunk{{0, 1, "a\n", ""}, {1, 2, "", "2: line is longer than 8 bytes"}, {2, 3, "y\n", ""}}},
		{"long last line without newline", "a\n" + strings.Repeat("x", 200_000), 8, 8, false,
			[]chunk{{0, 1, "a\n", ""}, {1, 2, "", "2: line is longer than 8 bytes"}}},
		{"quoted newline kept", "\"a\nb\",1\nc,2\nd,3\n", 8, 8, true, []chunk{{0, 1, "\"a\nb\",1\n", ""}, {1, 3, "c,2\nd,3\n", ""}}},
		{"unclosed quote is one error", "a,1\n\"b\n" + strings.Repeat("c\n", 50), 8, 8, true,
			[]chunk{{0, 1, "a,1\n", ""}, {1, 2, "", "2: line is longer than 8 bytes"}}},
		{"quotes in CSV comments ignored", "# \"\na,1\nb,2\n", 8, 8, true, []chunk{{0, 1, "# \"\na,1\n", ""}, {1, 3, "b,2\n", ""}}},
		{"quotes ignored outside CSV", "\"a\nb\n", 3, 3, false, []chunk{{0, 1, "\"a\n", ""}, {1, 2, "b\n", ""}}},
	}
	for _, tt := range tests {
		got := collect(t, tt.in, tt.max, tt.line, tt.csvQuotes)
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
	for _, c := range collect(t, b.String(), 1000, 100, false) {
		if len(c.data) > 1000 {
			t.Errorf("chunk %d has %d bytes", c.seq, len(c.data))
		}
		again.WriteString(c.data)
	}
	if again.String() != b.String() {
		t.Error("chunks do not reassemble the input")
	}
}

// TestChunksFitTheMaxPayload: a full chunk of the worst input for JSON
// (quotes, backslashes, control characters, '<', non-ASCII, invalid
// UTF-8) still fits the max payload once encoded, with room for the
// envelope, for NATS's default and a smaller server limit.
func TestChunksFitTheMaxPayload(t *testing.T) {
	worst := strings.Repeat("\"\\\x01\x1f<>&\u2028é\xff,", 1<<16)
	for _, maxPayload := range []int64{1 << 20, 256 << 10} {
		chunk, line := chunkSizes(maxPayload)
		if line > chunk {
			t.Fatalf("line %d > chunk %d", line, chunk)
		}
		req := ImportChunkRequest{AccountID: strings.Repeat("a", 36), ImportID: strings.Repeat("i", 36), Seq: 1 << 40, FirstLine: 1 << 40,
			Data: []byte(worst[:chunk]), LineErrors: []LineError{{Line: 1 << 40, Message: fmt.Sprintf("line is longer than %d bytes", line)}}}
		b, err := json.Marshal(&req)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(b))+1024 > maxPayload {
			t.Errorf("max payload %d: a chunk of %d bytes encodes to %d", maxPayload, chunk, len(b))
		}
		var back ImportChunkRequest
		if err := json.Unmarshal(b, &back); err != nil || string(back.Data) != worst[:chunk] {
			t.Errorf("max payload %d: data did not survive the trip", maxPayload)
		}
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
