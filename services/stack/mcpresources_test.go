package stack

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
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

// pngHeader is a binary skill file: not UTF-8, so it is read as a blob.
var pngHeader = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0xff, 0x00}

// TestMCPSkillsAndFiles: the go-sdk client lists and reads a skill's files
// as resources, reads its own account's file through the template, never
// another account's (an anonymous caller gets no template), and gets a
// skill as a prompt with its task argument.
func TestMCPSkillsAndFiles(t *testing.T) {
	natsURL := servicetest.NATS(t)
	db := servicetest.Postgres(t, nil)
	log := servicetest.Logger(t)
	cfg := testConfig(t, natsURL, db.DSN)
	skills := t.TempDir()
	writeSkill(t, skills)
	cfg.SkillDirs = []string{skills}
	gw := gateway.New(gateway.Options{Config: cfg, Log: log})
	startGroup(t, vfssvc.New(vfssvc.Options{Config: cfg, Log: log}), registrysvc.New(registrysvc.Options{Config: cfg, Log: log}), gw)
	base := "http://" + gw.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
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
	_, err := files.NewFS(bus).Write(ctx, &files.WriteRequest{Scope: files.Scope{AccountID: aliceID}, Path: "/memories/plans/todo.md", Content: "- buy milk\n"})
	must(t, err)

	connect := func(key string) *mcp.ClientSession {
		hc := http.DefaultClient
		if key != "" {
			hc = &http.Client{Transport: bearer{key}}
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "resources-test", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true}, nil)
		must(t, err)
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	alice, bob, anon := connect(aliceKey), connect(bobKey), connect("")

	if alice.InitializeResult().Capabilities.Resources == nil {
		t.Fatalf("resources not advertised: %+v", alice.InitializeResult().Capabilities)
	}
	list, err := anon.ListResources(ctx, nil)
	must(t, err)
	got := map[string]*mcp.Resource{}
	for _, r := range list.Resources {
		got[r.URI] = r
	}
	md := got["skill://greet/SKILL.md"]
	if md == nil || md.MIMEType != "text/markdown" || md.Description != "Say hello properly." || got["skill://greet/examples/hi.txt"] == nil || got["skill://greet/logo.png"] == nil {
		t.Fatalf("resources/list: %+v", list.Resources)
	}
	if _, ok := got["skill://greet/.secret"]; ok {
		t.Errorf("a hidden file is listed")
	}

	read := func(cs *mcp.ClientSession, uri string) (*mcp.ResourceContents, error) {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return nil, err
		}
		if len(res.Contents) != 1 {
			t.Fatalf("%s: %d contents", uri, len(res.Contents))
		}
		return res.Contents[0], nil
	}
	c, err := read(anon, "skill://greet/SKILL.md")
	must(t, err)
	if !strings.Contains(c.Text, "Greet the user by name.") || c.MIMEType != "text/markdown" {
		t.Errorf("SKILL.md: %+v", c)
	}
	c, err = read(anon, "skill://greet/logo.png")
	must(t, err)
	if !bytes.Equal(c.Blob, pngHeader) || c.MIMEType != "image/png" || c.Text != "" {
		t.Errorf("logo.png: %+v", c)
	}
	for _, uri := range []string{"skill://greet/../../etc/passwd", "skill://nope/SKILL.md", "skill://greet/missing.txt", "https://example.com/x"} {
		if _, err := read(anon, uri); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("%s: err %v, want not found", uri, err)
		}
	}

	// The template: alice's own file; bob names the same URI and reaches
	// only his own (absent) file; anonymous callers get no template.
	tpl, err := alice.ListResourceTemplates(ctx, nil)
	must(t, err)
	if len(tpl.ResourceTemplates) != 1 || tpl.ResourceTemplates[0].URITemplate != "vfs:///memories/{+path}" {
		t.Fatalf("alice's templates: %+v", tpl.ResourceTemplates)
	}
	if tpl, err := anon.ListResourceTemplates(ctx, nil); err != nil || len(tpl.ResourceTemplates) != 0 {
		t.Errorf("anonymous templates: %+v %v", tpl, err)
	}
	c, err = read(alice, "vfs:///memories/plans/todo.md")
	must(t, err)
	if c.Text != "- buy milk\n" || c.MIMEType != "text/markdown; charset=utf-8" && c.MIMEType != "text/markdown" {
		t.Errorf("alice's file: %+v", c)
	}
	if c, err := read(bob, "vfs:///memories/plans/todo.md"); err == nil {
		t.Errorf("bob read alice's file: %+v", c)
	}
	if c, err := read(anon, "vfs:///memories/plans/todo.md"); err == nil {
		t.Errorf("an anonymous caller read alice's file: %+v", c)
	}

	// Skills as prompts.
	prompts, err := anon.ListPrompts(ctx, nil)
	must(t, err)
	if len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != "greet" || prompts.Prompts[0].Description != "Say hello properly." ||
		len(prompts.Prompts[0].Arguments) != 1 || prompts.Prompts[0].Arguments[0].Name != "task" {
		t.Fatalf("prompts/list: %+v", prompts.Prompts)
	}
	for _, tc := range []struct {
		args map[string]string
		want string
	}{
		{nil, "Greet the user by name."},
		{map[string]string{"task": "Greet Ada."}, "Greet the user by name.\n\nTask: Greet Ada."},
	} {
		p, err := alice.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: tc.args})
		must(t, err)
		if len(p.Messages) != 1 || p.Messages[0].Role != "user" {
			t.Fatalf("prompts/get %v: %+v", tc.args, p)
		}
		if tx, ok := p.Messages[0].Content.(*mcp.TextContent); !ok || tx.Text != tc.want {
			t.Errorf("prompts/get %v: %+v, want %q", tc.args, p.Messages[0].Content, tc.want)
		}
	}
	if _, err := anon.GetPrompt(ctx, &mcp.GetPromptParams{Name: "nope"}); err == nil || !strings.Contains(err.Error(), "unknown prompt") {
		t.Errorf("unknown prompt: %v", err)
	}

	// Completion: the template's path from the caller's own files only;
	// a skill's task is free text.
	complete := func(cs *mcp.ClientSession, ref *mcp.CompleteReference, arg, value string) ([]string, error) {
		res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: arg, Value: value}})
		if err != nil {
			return nil, err
		}
		return res.Completion.Values, nil
	}
	tplRef := &mcp.CompleteReference{Type: "ref/resource", URI: "vfs:///memories/{+path}"}
	for _, tc := range []struct {
		who   string
		cs    *mcp.ClientSession
		value string
		want  string
	}{
		{"alice", alice, "pl", "[plans/todo.md]"},
		{"alice", alice, "x", "[]"},
		{"bob", bob, "", "[]"},
		{"anonymous", anon, "", "[]"},
	} {
		got, err := complete(tc.cs, tplRef, "path", tc.value)
		if err != nil || fmt.Sprint(got) != tc.want {
			t.Errorf("%s completes %q: %v %v, want %s", tc.who, tc.value, got, err, tc.want)
		}
	}
	if got, err := complete(alice, &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"}, "task", "Gr"); err != nil || len(got) != 0 {
		t.Errorf("task completion: %v %v", got, err)
	}
	if _, err := complete(alice, &mcp.CompleteReference{Type: "ref/prompt", Name: "nope"}, "task", ""); err == nil {
		t.Errorf("completion of an unknown prompt succeeded")
	}
}

// writeSkill writes the skill greet: SKILL.md, a text file in a subfolder,
// a binary file and a hidden file.
func writeSkill(t *testing.T, root string) {
	t.Helper()
	dir := filepath.Join(root, "greet")
	must(t, os.MkdirAll(filepath.Join(dir, "examples"), 0o755))
	for name, data := range map[string][]byte{
		"SKILL.md":        []byte("---\nname: greet\ndescription: Say hello properly.\n---\nGreet the user by name.\n"),
		"examples/hi.txt": []byte("Hi, Ada!\n"),
		"logo.png":        pngHeader,
		".secret":         []byte("hidden"),
	} {
		must(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
}
