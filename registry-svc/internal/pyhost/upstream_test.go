package pyhost

import (
	"context"
	"encoding/json"
	"testing"
)

// Tools written in upstream Mirobody's style: inputSchema and meta on
// methods, {"success", "data"} envelopes, _enabled, generators and bytes.
func TestUpstreamStyleTools(t *testing.T) {
	p, found, _ := startPool(t, Options{Workers: 1}, "../../testdata/upstream")
	byName := map[string]ToolInfo{}
	for _, tl := range found.Tools {
		byName[tl.Name] = tl
	}
	if _, ok := byName["paid_lookup"]; ok {
		t.Error("a class whose _enabled() is False was loaded")
	}
	pie := byName["generate_pie_chart"]
	if got := string(pie.InputSchema); got != `{"type":"object","properties":{"data":{"type":"array","items":{"type":"object"}},"title":{"type":"string"}},"required":["data"]}` {
		t.Errorf("inputSchema attribute not honoured: %s", got)
	}
	if string(pie.Meta) != `{"openai/outputTemplate":"ui://widget/chart.html"}` || !pie.TakesUserInfo {
		t.Errorf("meta %s, takes_user_info %v", pie.Meta, pie.TakesUserInfo)
	}
	if got := string(byName["custom_fn"].InputSchema); got != `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a"]}` {
		t.Errorf("a function's inputSchema: %s", got)
	}

	tests := []struct {
		tool, args string
		userInfo   any
		want       string
	}{
		{"generate_pie_chart", `{"data":[{"a":1},{"b":2}],"title":"T"}`, map[string]any{"success": true, "user_id": "u1", "session_id": ""},
			`{"content":[{"type":"text","text":"{\"points\":2,\"title\":\"T\",\"user\":\"u1\"}"}],"structuredContent":{"points":2,"title":"T","user":"u1"}}`},
		{"custom_fn", `{"a":40}`, nil, `{"content":[{"type":"text","text":"42"}]}`},
		{"chart_list", `{}`, nil, `{"content":[{"type":"text","text":"[1,2]"}],"structuredContent":{"result":[1,2]}}`},
		{"fail_chart", `{"reason":"empty series"}`, nil, `{"content":[{"type":"text","text":"empty series"}],"isError":true}`},
		{"chart_png", `{}`, nil, `{"content":[{"type":"image","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==","mimeType":"image/png"}]}`},
		{"raw_wav", `{}`, nil, `{"content":[{"type":"audio","data":"UklGRiQAAABXQVZFZm10IA==","mimeType":"audio/wav"}]}`},
		{"raw_pdf", `{}`, nil, `{"content":[{"type":"resource","resource":{"uri":"mirobody://tools/raw_pdf/result","mimeType":"application/pdf","blob":"JVBERi0xLjQKJeLj"}}]}`},
		{"raw_binary", `{}`, nil, `{"content":[{"type":"resource","resource":{"uri":"mirobody://tools/raw_binary/result","mimeType":"application/octet-stream","blob":"AAH+/w=="}}]}`},
		{"raw_text", `{}`, nil, `{"content":[{"type":"text","text":"héllo"}]}`},
		{"stream_words", `{"n":3}`, nil, `{"content":[{"type":"text","text":"w0 w1 w2 "}]}`},
		{"stream_rows", `{}`, nil, `{"content":[{"type":"text","text":"[{\"row\":0},{\"row\":1}]"}],"structuredContent":{"result":[{"row":0},{"row":1}]}}`},
		{"endless", `{}`, nil, `{"content":[{"type":"text","text":"endless failed: its generator yielded more than 16777216 bytes or 100000 items"}],"isError":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			r, err := p.Call(context.Background(), tt.tool, json.RawMessage(tt.args), tt.userInfo, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(r)
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
