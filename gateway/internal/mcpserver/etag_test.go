package mcpserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/gateway/internal/authn"
	"github.com/mirobody/mirobody-go/services/registry"
)

func TestNoneMatchHits(t *testing.T) {
	tests := []struct {
		header, etag string
		want         bool
	}{
		{`"abc"`, `"abc"`, true},
		{`W/"abc"`, `"abc"`, true},
		{`"x", "abc"`, `"abc"`, true},
		{`*`, `"abc"`, true},
		{`"abcd"`, `"abc"`, false},
		{``, `"abc"`, false},
		{`*`, ``, false},
	}
	for _, tt := range tests {
		if got := noneMatchHits(tt.header, tt.etag); got != tt.want {
			t.Errorf("noneMatchHits(%q, %q) = %v, want %v", tt.header, tt.etag, got, tt.want)
		}
	}
}

func TestEncodedListsReuseWhileETagHolds(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	q := &request{r: r, principal: &authn.Principal{AccountID: "a1"}}
	list := func(rev, etag string, names ...string) *registry.ListResponse {
		resp := &registry.ListResponse{Revision: rev, ETag: etag}
		for _, n := range names {
			resp.Tools = append(resp.Tools, registry.Tool{Name: n})
		}
		return resp
	}
	c := &encodedLists{}
	steps := []struct {
		name, etag string
		resp       *registry.ListResponse
		want       string // a tool name the body must hold
	}{
		{"first encoding", `"e1"`, list("r1", "x1", "one"), "one"},
		{"same ETag: the cached body, even from a different answer", `"e1"`, list("r1", "x1", "ignored"), "one"},
		{"new ETag (data or servers changed)", `"e2"`, list("r1", "x2", "two"), "two"},
		{"new revision (registry changed)", `"e2"`, list("r2", "x2", "three"), "three"},
		{"no ETag: encoded every time", "", list("r2", "", "four"), "four"},
	}
	for _, s := range steps {
		body, err := c.get(q, s.etag, s.resp)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		var got listResult
		if err := json.Unmarshal(body, &got); err != nil || len(got.Tools) != 1 || got.Tools[0].Name != s.want {
			t.Errorf("%s: body %s (%v), want tool %q", s.name, body, err, s.want)
		}
	}
	other := &request{r: r, principal: &authn.Principal{AccountID: "a2"}}
	if body, _ := c.get(other, `"e2"`, list("r2", "x2", "mine")); !strings.Contains(string(body), "mine") {
		t.Errorf("another account got a cached body: %s", body)
	}
}
