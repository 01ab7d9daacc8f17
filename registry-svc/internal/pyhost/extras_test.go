package pyhost

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/wire"
)

// TestExtras runs the conformance fixture module's RESOURCES and PROMPTS
// through a host, plus a module whose entries are broken.
func TestExtras(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../../gateway/testdata/conformance-tools/conformance_resources.py")
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "fixtures.py"), src, 0o644))
	must(os.WriteFile(filepath.Join(dir, "more.py"), []byte(`
async def _later(day):
    return "note of " + day

def _boom():
    raise RuntimeError("no")

RESOURCES = [
    {"uri": "test://static-text", "text": "second"},
    {"uri": "notes://{day}", "read": _later},
    {"uri": "ui://card.html", "text": "<p>hi</p>"},
    {"uri": "x://both", "text": "a", "blob": b"b"},
    {"uri": "x://{v}", "text": "template without read"},
    "not a dict",
]
PROMPTS = [{"name": "boom", "get": _boom}, {"name": "nobody"}]
`), 0o644))
	ctx := context.Background()
	p, found, lb := startPool(t, Options{Workers: 1}, dir)
	byURI := map[string]ResourceInfo{}
	for _, r := range found.Resources {
		byURI[r.URI+r.URITemplate] = r
	}
	if r := byURI["test://static-text"]; r.Description == "" || r.MimeType != "text/plain" {
		t.Errorf("static-text: %+v", r)
	}
	if r := byURI["ui://card.html"]; r.MimeType != "text/html;profile=mcp-app" || r.Name != "card.html" {
		t.Errorf("ui resource: %+v", r)
	}
	if _, ok := byURI["test://template/{id}/data"]; !ok {
		t.Errorf("template missing: %+v", found.Resources)
	}
	for _, bad := range []string{"x://both", "x://{v}"} {
		if _, ok := byURI[bad]; ok {
			t.Errorf("invalid entry %s registered", bad)
		}
	}
	for _, want := range []string{"give exactly one of", "a URI template needs a read function", "an entry must be a dict", "uri collision"} {
		if !strings.Contains(lb.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, lb.String())
		}
	}

	for _, tc := range []struct{ uri, want string }{
		{"test://template/123/data", `{"id": "123", "templateTest": true, "data": "Data for ID: 123"}`},
		{"notes://monday", "note of monday"},
	} {
		r, err := p.ReadResource(ctx, tc.uri)
		if err != nil || len(r.Contents) != 1 || r.Contents[0].Text == nil || *r.Contents[0].Text != tc.want {
			t.Errorf("read %s: %+v, %v", tc.uri, r, err)
		}
	}
	r, err := p.ReadResource(ctx, "test://static-binary")
	if err != nil || len(r.Contents[0].Blob) == 0 || r.Contents[0].MimeType != "image/png" {
		t.Errorf("read binary: %+v, %v", r, err)
	}
	if _, err := p.ReadResource(ctx, "test://nothing"); !wire.IsCode(err, wire.NotFound) {
		t.Errorf("unknown resource: %v", err)
	}

	g, err := p.GetPrompt(ctx, &registry.PromptGetRequest{Name: "test_prompt_with_arguments", Arguments: map[string]string{"arg1": "a", "arg2": "b"}})
	if err != nil || len(g.Messages) != 1 || !strings.Contains(string(g.Messages[0]), "arg1='a', arg2='b'") {
		t.Errorf("prompt with arguments: %+v, %v", g, err)
	}
	g, err = p.GetPrompt(ctx, &registry.PromptGetRequest{Name: "test_prompt_with_image"})
	var msg struct {
		Role    string `json:"role"`
		Content struct {
			Type, MimeType string
		} `json:"content"`
	}
	if err != nil || len(g.Messages) != 2 || json.Unmarshal(g.Messages[0], &msg) != nil || msg.Content.Type != "image" || msg.Role != "user" {
		t.Errorf("prompt with image: %+v, %v", g, err)
	}
	for _, tc := range []struct {
		name string
		args map[string]string
		code wire.Code
	}{
		{"test_prompt_with_arguments", map[string]string{"arg1": "a"}, wire.InvalidArgument},
		{"test_prompt_with_arguments", map[string]string{"arg1": "a", "arg2": "b", "arg3": "c"}, wire.InvalidArgument},
		{"no_such_prompt", nil, wire.NotFound},
		{"boom", nil, wire.Internal},
	} {
		if _, err := p.GetPrompt(ctx, &registry.PromptGetRequest{Name: tc.name, Arguments: tc.args}); !wire.IsCode(err, tc.code) {
			t.Errorf("prompt %s %v: %v, want %s", tc.name, tc.args, err, tc.code)
		}
	}

	c, err := p.Complete(ctx, &registry.CompleteRequest{Prompt: "test_prompt_with_arguments", Argument: "arg1", Value: "par"})
	if err != nil || strings.Join(c.Values, ",") != "paris,park,party" {
		t.Errorf("complete prompt: %+v, %v", c, err)
	}
	c, err = p.Complete(ctx, &registry.CompleteRequest{Template: "test://template/{id}/data", Argument: "id", Value: "12"})
	if err != nil || strings.Join(c.Values, ",") != "123,124" {
		t.Errorf("complete template: %+v, %v", c, err)
	}
	if _, err := p.Complete(ctx, &registry.CompleteRequest{Prompt: "test_prompt_with_arguments", Argument: "nope"}); !wire.IsCode(err, wire.InvalidArgument) {
		t.Errorf("complete unknown argument: %v", err)
	}
}
