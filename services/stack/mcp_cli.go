package stack

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
)

// headerFlags collects repeated --header "Name: value" flags.
type headerFlags map[string]string

func (h headerFlags) String() string { return "" }

func (h headerFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("header %q: want \"Name: value\"", v)
	}
	h[strings.TrimSpace(k)] = strings.TrimSpace(val)
	return nil
}

// runMCP manages an account's external MCP servers (registry-svc/design.md
// "External MCP servers") over NATS, the command-line twin of /api/mcp-servers:
// add, ls, rm.
func runMCP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const usage = "usage: mirobody mcp add --name N --url URL [--token-file FILE|-] [--header 'K: V']... [--oauth] [--disabled], " +
		"mirobody mcp ls, or mirobody mcp rm --name N (each with [--account ID|EMAIL])"
	if len(args) == 0 || (args[0] != "add" && args[0] != "ls" && args[0] != "rm") {
		return fmt.Errorf("%s", usage)
	}
	fs := flag.NewFlagSet("mirobody mcp "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	account := fs.String("account", DemoEmail, "account id or email")
	path := fs.String("config", "", "config file")
	name := fs.String("name", "", "add, rm: the server's name ([a-z0-9_-]{1,32}); its tools are listed as <name>__<tool>")
	url := fs.String("url", "", "add: the server's Streamable HTTP endpoint")
	tokenFile := fs.String("token-file", "", "add: file holding the server's bearer token (- for stdin); kept out of the command line and shell history")
	disabled := fs.Bool("disabled", false, "add: store the server switched off")
	oauth := fs.Bool("oauth", false, "add: authorize with OAuth; prints the URL to open in a browser")
	headers := headerFlags{}
	fs.Var(headers, "header", `add: a header sent to the server, "Name: value" (repeatable)`)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if args[0] != "ls" && *name == "" {
		return fmt.Errorf("--name is required")
	}
	var token string
	if *tokenFile != "" {
		var b []byte
		var err error
		if *tokenFile == "-" {
			b, err = io.ReadAll(os.Stdin)
		} else {
			b, err = os.ReadFile(*tokenFile)
		}
		if err != nil {
			return fmt.Errorf("reading the token: %w", err)
		}
		token = strings.TrimSpace(string(b))
	}
	c, cfg, closeFn, err := adminClient(*path, stderr)
	if err != nil {
		return err
	}
	defer closeFn()
	a, err := findAccount(ctx, accounts.NewAccounts(c), *account)
	if err != nil {
		return fmt.Errorf("finding account %s: %w", *account, err)
	}
	reg := registry.NewClient(c)
	switch args[0] {
	case "add":
		enabled := !*disabled
		req := &registry.ServerAddRequest{AccountID: a.ID, Name: *name, URL: *url, AccessToken: token, Headers: headers, Enabled: &enabled}
		if *oauth {
			// No browser here: the answer is a start link that binds the
			// browser which opens it first.
			req.Auth, req.RedirectURI, req.Link = registry.AuthOAuth, strings.TrimRight(cfg.MCPPublicURL, "/")+registry.OAuthCallbackPath, true
		}
		s, err := reg.AddServer(ctx, req)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "added %s (%s), health %s\n", s.Name, s.URL, healthText(s.Health))
		if s.AuthorizeURL != "" {
			fmt.Fprintf(stdout, "open this page in your browser to authorize Mirobody (once, within 10 minutes; keep it private):\n%s\n", s.AuthorizeURL)
		}
	case "ls":
		r, err := reg.ListServers(ctx, &registry.ServerListRequest{AccountID: a.ID})
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tURL\tENABLED\tAUTH\tHEALTH")
		for _, s := range r.Servers {
			fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\n", s.Name, s.URL, s.Enabled, s.Auth, healthText(s.Health))
		}
		return tw.Flush()
	case "rm":
		if _, err := reg.RemoveServer(ctx, &registry.ServerRemoveRequest{AccountID: a.ID, Name: *name}); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "removed %s\n", *name)
	}
	return nil
}

func healthText(h registry.Health) string {
	switch {
	case h.Status == registry.HealthOK && h.Tools != nil:
		return fmt.Sprintf("ok (%d tools)", *h.Tools)
	case h.Error != "":
		return h.Status + ": " + h.Error
	}
	return h.Status
}
