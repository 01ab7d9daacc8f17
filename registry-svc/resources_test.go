package registrysvc

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/wire"
)

// TestToolFolderResources: resource folder files and a module's RESOURCES
// and PROMPTS are listed and read; the watch announces a changed skill
// file, a new resource file, and a reload that changes a module's prompts.
func TestToolFolderResources(t *testing.T) {
	tools, res, skills := t.TempDir(), t.TempDir(), t.TempDir()
	write := func(dir, name, body string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(tools, "clock.py", `
def now() -> str:
    """The time."""
    return "noon"

now.meta = {"ui": {"resourceUri": "ui://clock/face.html"}}

def _face():
    return "<p>noon</p>"

RESOURCES = [{"uri": "ui://clock/face.html", "name": "Clock face", "read": _face}]
PROMPTS = [{"name": "ask_time", "text": "What time is it in {city}?"}]
`)
	write(res, "ui/clock/face.html", "<p>static, shadowed by nothing: first folder wins only among folders</p>")
	write(res, "docs/guide.md", "# Guide\n")
	write(res, "loose.txt", "no scheme folder: not a resource")
	write(skills, "alpha/SKILL.md", "---\nname: alpha\ndescription: A.\n---\nBody.\n")

	url := servicetest.NATS(t)
	events := make(chan *registry.ResourcesChangedEvent, 16)
	sub, err := servicetest.Conn(t, url).Subscribe(registry.ResourcesChanged.Subject, func(m *nats.Msg) {
		if ev, err := registry.ResourcesChanged.Decode(m); err == nil {
			events <- ev
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	e := startOn(t, url, map[string]string{"MCP_TOOL_DIRS": tools, "MCP_RESOURCE_DIRS": res, "SKILL_DIRS": skills,
		"PYTHON_WORKERS": "1", "TOOLS_WATCH": "true"})
	ctx := context.Background()

	list, err := e.client.ListResources(ctx, &registry.ResourceListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI+" "+r.MimeType)
	}
	want := []string{"docs://guide.md text/markdown", "ui://clock/face.html text/html;profile=mcp-app"}
	if !slices.Equal(uris, want) {
		t.Errorf("resources = %q, want %q", uris, want)
	}
	// The folder's file wins over the module's entry of the same URI.
	got, err := e.client.ReadResource(ctx, &registry.ResourceReadRequest{URI: "ui://clock/face.html"})
	if err != nil || got.Contents[0].Text == nil || !strings.HasPrefix(*got.Contents[0].Text, "<p>static") {
		t.Errorf("read ui://clock/face.html: %+v, %v", got, err)
	}
	if _, err := e.client.ReadResource(ctx, &registry.ResourceReadRequest{URI: "loose.txt"}); !wire.IsCode(err, wire.NotFound) {
		t.Errorf("read loose.txt: %v", err)
	}
	prompts, err := e.client.ListPrompts(ctx, &registry.PromptListRequest{})
	if err != nil || len(prompts.Prompts) != 1 || prompts.Prompts[0].Arguments[0].Name != "city" {
		t.Fatalf("prompts: %+v, %v", prompts, err)
	}
	p, err := e.client.GetPrompt(ctx, &registry.PromptGetRequest{Name: "ask_time", Arguments: map[string]string{"city": "Oslo"}})
	if err != nil || len(p.Messages) != 1 || !strings.Contains(string(p.Messages[0]), "What time is it in Oslo?") {
		t.Errorf("get prompt: %+v, %v", p, err)
	}
	if _, err := e.client.GetPrompt(ctx, &registry.PromptGetRequest{Name: "ask_time"}); !wire.IsCode(err, wire.InvalidArgument) {
		t.Errorf("get prompt without its argument: %v", err)
	}

	next := func(what string, ok func(*registry.ResourcesChangedEvent) bool) {
		t.Helper()
		deadline := time.After(15 * time.Second)
		for {
			select {
			case ev := <-events:
				if ok(ev) {
					return
				}
			case <-deadline:
				t.Fatalf("no resource change event for %s", what)
			}
		}
	}
	write(skills, "alpha/SKILL.md", "---\nname: alpha\ndescription: A.\n---\nBody, edited.\n")
	next("an edited skill", func(ev *registry.ResourcesChangedEvent) bool {
		return slices.Equal(ev.Updated, []string{"skill://alpha/SKILL.md"}) && !ev.ResourcesListChanged
	})
	write(res, "docs/more/new.txt", "new")
	next("a new resource file in a new folder", func(ev *registry.ResourcesChangedEvent) bool {
		return ev.ResourcesListChanged && slices.Contains(ev.Updated, "docs://more/new.txt")
	})
	write(tools, "clock.py", strings.Replace(`
def now() -> str:
    """The time."""
    return "noon"

PROMPTS = [{"name": "ask_time", "text": "What time is it in {place}?"}]
`, "\r", "", -1))
	next("a reload that changes a prompt", func(ev *registry.ResourcesChangedEvent) bool {
		return ev.PromptsListChanged && ev.ResourcesListChanged
	})
}

// TestPromptAsks: a prompt function that elicits stops with the request
// (SEP-2322 on prompts/get), renders with the answer, and reports the
// missing capability when the caller cannot elicit.
func TestPromptAsks(t *testing.T) {
	tools := t.TempDir()
	src := `
import mirobody

def _greeting():
    r = mirobody.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="who")
    return "Greet %s." % r["content"]["name"]

PROMPTS = [{"name": "greeting", "get": _greeting}]
`
	if err := os.WriteFile(filepath.Join(tools, "greet.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	e := startOn(t, servicetest.NATS(t), map[string]string{"MCP_TOOL_DIRS": tools, "PYTHON_WORKERS": "1"})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  registry.PromptGetRequest
		want func(*registry.PromptGetResponse) bool
	}{
		{"asks", registry.PromptGetRequest{Name: "greeting", ClientCapabilities: []string{"elicitation"}},
			func(r *registry.PromptGetResponse) bool {
				return len(r.InputRequests) == 1 && strings.Contains(string(r.InputRequests["who"]), `"elicitation/create"`)
			}},
		{"answered", registry.PromptGetRequest{Name: "greeting", ClientCapabilities: []string{"elicitation"},
			InputResponses: map[string]json.RawMessage{"who": json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)},
			Replay:         []string{"who"}},
			func(r *registry.PromptGetResponse) bool {
				return len(r.InputRequests) == 0 && len(r.Messages) == 1 && strings.Contains(string(r.Messages[0]), "Greet Ada.")
			}},
		{"cannot elicit", registry.PromptGetRequest{Name: "greeting"},
			func(r *registry.PromptGetResponse) bool {
				return r.MissingCapability == "elicitation" && len(r.InputRequests) == 0
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.client.GetPrompt(ctx, &tc.req)
			if err != nil || !tc.want(got) {
				t.Errorf("GetPrompt = %+v, %v", got, err)
			}
		})
	}
}
