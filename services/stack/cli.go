package stack

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"golang.org/x/term"

	"github.com/mirobody/mirobody-go/services/boot"
	"github.com/mirobody/mirobody-go/services/buildinfo"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/natsx"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Usage is the `mirobody` help text.
const Usage = `mirobody: the Mirobody-Go MCP tool platform and agent runtime

Usage:
  mirobody dev                                   all services in one process, with embedded NATS and a private Postgres
  mirobody serve --target=gateway,registry-svc   run a subset against NATS_URL and DATABASE_URL (default: all)
  mirobody account create --email E [--password-file FILE|-]
  mirobody keys create --account ID|EMAIL --name N [--scopes mcp,api]
  mirobody keys list --account ID|EMAIL
  mirobody keys revoke --account ID|EMAIL --key KEY_ID
  mirobody data import --health FILE|--genetic FILE [--account ID|EMAIL] [--partial]
  mirobody data ls [--account ID|EMAIL]
  mirobody data series --indicator NAME [--account ID|EMAIL]
  mirobody data delete --kind health|genetic|--import ID [--account ID|EMAIL]
  mirobody audit [--account ID|EMAIL | --all] [--limit N] [--before ID]
  mirobody mcp add|ls|rm [--account ID|EMAIL] [--name N --url URL --token-file FILE --header 'K: V' --oauth]
  mirobody chat [--key KEY] [--session ID] [--agent deep|base] [--provider NAME] [--file PATH]... [--json] "question"
  mirobody nats-creds [--dir DIR] [--output table|compose|users|server-config]
  mirobody version

Every command takes --config FILE (default: $MIROBODY_CONFIG or ./config.yaml).
`

// Main runs the mirobody command line and returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, Usage)
		return 2
	}
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "version", "--version":
		fmt.Fprintf(stdout, "mirobody %s\n", buildinfo.Version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, Usage)
		return 0
	case "dev":
		err = runDev(ctx, rest, stdout, stderr)
	case "serve":
		err = runServe(ctx, rest, stderr)
	case "account":
		err = runAccount(ctx, rest, stdout, stderr)
	case "keys":
		err = runKeys(ctx, rest, stdout, stderr)
	case "data":
		err = runData(ctx, rest, stdout, stderr)
	case "chat":
		err = runChat(ctx, rest, stdout, stderr)
	case "nats-creds":
		err = runNATSCreds(rest, stdout, stderr)
	case "mcp":
		err = runMCP(ctx, rest, stdout, stderr)
	case "audit":
		err = runAudit(ctx, rest, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "mirobody: unknown command %q\n\n%s", cmd, Usage)
		return 2
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		// The flag set printed the usage; asking for it is no failure.
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "mirobody %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	env, err := boot.Setup("mirobody dev", args, stderr)
	if err != nil {
		return err
	}
	services, err := Dev(DevOptions{Config: env.Config, Log: env.Log, Metrics: env.Metrics, Out: stdout})
	if err != nil {
		return err
	}
	return env.Run(ctx, services...)
}

func runServe(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("mirobody serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("target", "all", "comma-separated services: "+strings.Join(Targets, ","))
	path := fs.String("config", "", "config file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	targets, err := ParseTargets(*target)
	if err != nil {
		return err
	}
	env, err := boot.Load(*path, stderr)
	if err != nil {
		return err
	}
	return env.Run(ctx, Build(env.Config, env.Log, env.Metrics, targets)...)
}

// adminClient loads the configuration and connects to NATS_URL for the
// account, key, data and mcp commands.
func adminClient(path string, stderr io.Writer) (*wire.Client, *conf.Config, func(), error) {
	env, err := boot.Load(path, stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	nc, err := cliConn(env.Config, "mirobody-cli", env.Log)
	if err != nil {
		return nil, nil, nil, err
	}
	return wire.NewClient(wire.ClientOptions{Conn: nc, DefaultTimeout: 10 * time.Second}), env.Config, nc.Close, nil
}

// cliConn connects as the cli identity: its seed in NATS_CREDS_DIR, else
// the one `mirobody dev` keeps under DEV_DIR, else no credentials.
func cliConn(cfg *conf.Config, name string, log *slog.Logger) (*nats.Conn, error) {
	seed := ""
	if cfg.NATSCredsDir != "" {
		seed = natsx.SeedFile(cfg.NATSCredsDir, natsx.IdentityCLI)
	} else if dev := natsx.SeedFile(filepath.Join(cfg.DevDir, devCredsDir), natsx.IdentityCLI); fileExists(dev) {
		seed = dev
	}
	nc, err := natsx.Connect(natsx.ConnectOptions{URL: cfg.NATSURL, Name: name, SeedFile: seed,
		InboxPrefix: natsx.InboxPrefix(natsx.IdentityCLI), Log: log})
	if err != nil && seed == "" && errors.Is(err, nats.ErrAuthorization) {
		return nil, fmt.Errorf("%w; set NATS_CREDS_DIR to a folder holding %s.nk", err, natsx.IdentityCLI)
	}
	if err != nil {
		return nil, err
	}
	// A service waits for a broker that starts later; a command does one
	// thing now, and its first request would only fail with a vague error.
	if !nc.IsConnected() {
		// The command says why itself; the closed connection's own log
		// line would only repeat it, late, from NATS's callback goroutine
		// while the command writes to the same stderr.
		nc.SetClosedHandler(nil)
		nc.Close()
		return nil, fmt.Errorf("cannot reach NATS at %s: start the stack (`mirobody dev`) or set NATS_URL to the address of its NATS server", cfg.NATSURL)
	}
	return nc, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// findAccount resolves an account given by id or by email.
func findAccount(ctx context.Context, acc *accounts.Accounts, idOrEmail string) (*accounts.Account, error) {
	if _, err := uuid.Parse(idOrEmail); err == nil {
		return acc.Get(ctx, &accounts.AccountGetRequest{ID: idOrEmail})
	}
	return acc.Get(ctx, &accounts.AccountGetRequest{Email: idOrEmail})
}

func runAccount(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return fmt.Errorf("usage: mirobody account create --email E [--password-file FILE|-]")
	}
	fs := flag.NewFlagSet("mirobody account create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	email := fs.String("email", "", "the account's email (required)")
	passwordFile := fs.String("password-file", "", "file holding a password for the login page (- to type it or pipe it in); kept out of the command line and shell history")
	password := fs.String("password", "", "a password for the login page, visible in the process list and shell history (prefer --password-file)")
	path := fs.String("config", "", "config file")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *email == "" {
		return fmt.Errorf("--email is required")
	}
	if *passwordFile != "" {
		p, err := readPassword(*passwordFile, stderr)
		if err != nil {
			return err
		}
		*password = p
	}
	c, _, closeFn, err := adminClient(*path, stderr)
	if err != nil {
		return err
	}
	defer closeFn()
	a, err := accounts.NewAccounts(c).Create(ctx, &accounts.AccountCreateRequest{Email: *email, Password: *password})
	if err != nil {
		return err
	}
	return printJSON(stdout, a)
}

// readPassword reads a password from a file, or with "-" from standard
// input: typed at a prompt without echo on a terminal, else its first line.
func readPassword(file string, prompt io.Writer) (string, error) {
	var b []byte
	var err error
	switch {
	case file != "-":
		b, err = os.ReadFile(file)
	case term.IsTerminal(int(os.Stdin.Fd())):
		fmt.Fprint(prompt, "Password: ")
		b, err = term.ReadPassword(int(os.Stdin.Fd()))
		fmt.Fprintln(prompt)
	default:
		b, err = io.ReadAll(os.Stdin)
	}
	if err != nil {
		return "", fmt.Errorf("reading the password: %w", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	p := strings.TrimSuffix(first, "\r")
	if p == "" {
		return "", errors.New("the password is empty")
	}
	return p, nil
}

func runKeys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: mirobody keys create|list|revoke --account ID|EMAIL ...")
	}
	fs := flag.NewFlagSet("mirobody keys "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	account := fs.String("account", "", "account id or email (required)")
	name := fs.String("name", "", "key name (create)")
	scopes := fs.String("scopes", "", "comma-separated scopes (create; default mcp,api)")
	keyID := fs.String("key", "", "key id (revoke)")
	path := fs.String("config", "", "config file")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *account == "" {
		return fmt.Errorf("--account is required")
	}
	c, _, closeFn, err := adminClient(*path, stderr)
	if err != nil {
		return err
	}
	defer closeFn()
	acc := accounts.NewAccounts(c)
	a, err := findAccount(ctx, acc, *account)
	if err != nil {
		return err
	}
	switch args[0] {
	case "create":
		var sc []string
		if *scopes != "" {
			sc = strings.Split(*scopes, ",")
		}
		k, err := acc.CreateKey(ctx, &accounts.KeyCreateRequest{AccountID: a.ID, Name: *name, Scopes: sc})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\n", k.Key)
		fmt.Fprintf(stderr, "key %s created for %s; it is shown only this once\n", k.APIKey.ID, a.Email)
		return nil
	case "list":
		r, err := acc.ListKeys(ctx, &accounts.KeyListRequest{AccountID: a.ID})
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tPREFIX\tSCOPES\tCREATED\tLAST USED\tREVOKED")
		for _, k := range r.Keys {
			fmt.Fprintf(tw, "%s\t%s\t%s…\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Prefix, strings.Join(k.Scopes, ","),
				k.Created.Format(time.RFC3339), fmtTime(k.LastUsed), fmtTime(k.Revoked))
		}
		return tw.Flush()
	case "revoke":
		if *keyID == "" {
			return fmt.Errorf("--key is required")
		}
		k, err := acc.RevokeKey(ctx, &accounts.KeyRevokeRequest{AccountID: a.ID, KeyID: *keyID})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked %s (%s)\n", k.ID, k.Name)
		return nil
	}
	return fmt.Errorf("unknown keys command %q: want create, list or revoke", args[0])
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
