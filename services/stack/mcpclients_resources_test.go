package stack

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/gateway"
	registrysvc "github.com/mirobody/mirobody-go/registry-svc"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

// tripModule is a tool module with an MCP App page linked from its tool
// and a prompt with arguments (tools/README.md "Resources and prompts").
const tripModule = `
import mirobody

def weather(city: str) -> str:
    """The weather in a city."""
    return "sunny in " + city

weather.meta = {"ui": {"resourceUri": "ui://weather/card.html"}}

def _card():
    return "<html><body>weather card</body></html>"

def _plan_trip(city: str, days: str = "2"):
    """Plan a trip.

    Args:
        city: Where to go.
        days: How many days.
    """
    return ["Plan %s days in %s." % (days, city), ("assistant", "Which season?")]

RESOURCES = [{"uri": "ui://weather/card.html", "name": "Weather card", "read": _card}]
PROMPTS = [{"name": "plan_trip", "get": _plan_trip, "complete": {"city": ["Oslo", "Osaka", "Paris"]}}]
`

// TestMCPResourceClients: the official TypeScript SDK and go-sdk clients
// list and read a skill file, their own file (never another account's) and
// a tool folder's ui:// page, get a tool folder's prompt with arguments,
// and the go-sdk client hears of its subscribed file's change.
func TestMCPResourceClients(t *testing.T) {
	natsURL := servicetest.NATS(t)
	db := servicetest.Postgres(t, nil)
	log := servicetest.Logger(t)
	cfg := testConfig(t, natsURL, db.DSN)
	skills, tools := t.TempDir(), t.TempDir()
	writeSkill(t, skills)
	must(t, os.WriteFile(filepath.Join(tools, "trip.py"), []byte(tripModule), 0o644))
	cfg.SkillDirs, cfg.MCPToolDirs, cfg.PythonWorkers = []string{skills}, []string{tools}, 1
	gw := gateway.New(gateway.Options{Config: cfg, Log: log})
	startGroup(t, vfssvc.New(vfssvc.Options{Config: cfg, Log: log}), registrysvc.New(registrysvc.Options{Config: cfg, Log: log}), gw)
	url := "http://" + gw.Addr() + "/mcp"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	bus := servicetest.Client(t, natsURL)
	accts := accounts.NewAccounts(bus)
	newAccount := func(email string) (id, key string) {
		a, err := accts.Create(ctx, &accounts.AccountCreateRequest{Email: email})
		must(t, err)
		k, err := accts.CreateKey(ctx, &accounts.KeyCreateRequest{AccountID: a.ID, Name: "t"})
		must(t, err)
		return a.ID, k.Key
	}
	aliceID, aliceKey := newAccount("alice@example.com")
	_, bobKey := newAccount("bob@example.com")
	fs := files.NewFS(bus)
	_, err := fs.Write(ctx, &files.WriteRequest{Scope: files.Scope{AccountID: aliceID}, Path: "/memories/plans/todo.md", Content: "- buy milk\n"})
	must(t, err)

	t.Run("typescript-sdk", func(t *testing.T) {
		node, dir := nodeTools(t)
		script := filepath.Join(dir, "ts-resources.mjs")
		src, err := os.ReadFile("testdata/ts-resources.mjs")
		must(t, err)
		must(t, os.WriteFile(script, src, 0o644))
		for _, tc := range []struct {
			who, key, file string
		}{
			{"alice", aliceKey, "- buy milk\n"},
			{"bob", bobKey, ""},
		} {
			var got struct {
				Resources, Templates, PromptArgs []string
				Skill, File, FileErr, UI, UIMime string
				Prompt                           string
			}
			out := runNode(t, dir, node, 0, script, url, tc.key)
			if err := json.Unmarshal(lastLine(out), &got); err != nil {
				t.Fatalf("ts output %s: %v", out, err)
			}
			if !slices.Contains(got.Resources, "skill://greet/SKILL.md") || !slices.Contains(got.Resources, "ui://weather/card.html") ||
				!slices.Contains(got.Templates, "vfs:///memories/{+path}") {
				t.Errorf("%s lists %v and templates %v", tc.who, got.Resources, got.Templates)
			}
			if !strings.Contains(got.Skill, "Greet the user by name.") {
				t.Errorf("%s reads the skill: %q", tc.who, got.Skill)
			}
			if got.File != tc.file || tc.file == "" && !strings.Contains(got.FileErr, "not found") {
				t.Errorf("%s reads vfs:///memories/plans/todo.md: %q (error %q), want %q", tc.who, got.File, got.FileErr, tc.file)
			}
			if got.UI != "<html><body>weather card</body></html>" || got.UIMime != "text/html;profile=mcp-app" {
				t.Errorf("%s reads the ui page: %q %q", tc.who, got.UI, got.UIMime)
			}
			if !slices.Equal(got.PromptArgs, []string{"city*", "days"}) || got.Prompt != "user:Plan 3 days in Oslo.|assistant:Which season?" {
				t.Errorf("%s gets plan_trip: %v %q", tc.who, got.PromptArgs, got.Prompt)
			}
		}
	})

	t.Run("go-sdk", func(t *testing.T) {
		updated := make(chan string, 16)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "resources-clients", Version: "1"}, &mcp.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
		}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{aliceKey}}}, nil)
		must(t, err)
		defer cs.Close()
		caps := cs.InitializeResult().Capabilities
		if caps.Resources == nil || !caps.Resources.Subscribe || !caps.Resources.ListChanged || caps.Prompts == nil || !caps.Prompts.ListChanged {
			t.Fatalf("capabilities %+v %+v", caps.Resources, caps.Prompts)
		}
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "vfs:///memories/plans/todo.md"})
		must(t, err)
		if res.Contents[0].Text != "- buy milk\n" {
			t.Errorf("alice's file: %+v", res.Contents[0])
		}
		p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "plan_trip", Arguments: map[string]string{"city": "Paris"}})
		must(t, err)
		if tx, ok := p.Messages[0].Content.(*mcp.TextContent); !ok || tx.Text != "Plan 2 days in Paris." || p.Messages[1].Role != "assistant" {
			t.Errorf("plan_trip: %+v", p.Messages)
		}
		c, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "plan_trip"},
			Argument: mcp.CompleteParamsArgument{Name: "city", Value: "Os"}})
		must(t, err)
		if !slices.Equal(c.Completion.Values, []string{"Oslo", "Osaka"}) {
			t.Errorf("complete city: %v", c.Completion.Values)
		}

		must(t, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "vfs:///memories/plans/todo.md"}))
		// The standalone GET stream opens in the background: write until
		// the first update arrives.
		deadline := time.After(30 * time.Second)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for got := ""; got == ""; {
			select {
			case got = <-updated:
				if got != "vfs:///memories/plans/todo.md" {
					t.Fatalf("update of %s", got)
				}
			case <-tick.C:
				_, err := fs.Write(ctx, &files.WriteRequest{Scope: files.Scope{AccountID: aliceID}, Path: "/memories/plans/todo.md",
					Content: "- buy milk\n- and bread\n", Overwrite: true})
				must(t, err)
			case <-deadline:
				t.Fatal("no notifications/resources/updated for the subscribed file")
			}
		}
	})
}
