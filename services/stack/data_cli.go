package stack

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/vfs/userdata"
)

// runData imports or deletes user data for an account (the demo account
// by default), over NATS like the key commands. It is the command-line twin
// of POST/DELETE /api/data/{health,genetic}; vfs-svc announces the change,
// so gated tools appear or vanish for open MCP sessions.
func runData(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "import" && args[0] != "delete") {
		return fmt.Errorf("usage: mirobody data import --health FILE|--genetic FILE [--account ID|EMAIL] [--partial], or mirobody data delete --kind health|genetic [--account ID|EMAIL]")
	}
	fs := flag.NewFlagSet("mirobody data "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	account := fs.String("account", DemoEmail, "account id or email")
	path := fs.String("config", "", "config file")
	partial := fs.Bool("partial", false, "import: keep the valid rows when some lines are invalid")
	health := fs.String("health", "", "import: health series file, CSV (indicator,value,unit,time[,source]) or a JSON array")
	genetic := fs.String("genetic", "", "import: 23andMe or AncestryDNA raw data file")
	kind := fs.String("kind", "", "delete: health or genetic")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch {
	case args[0] == "import" && (*health == "") == (*genetic == ""):
		return fmt.Errorf("give exactly one of --health FILE or --genetic FILE")
	case args[0] == "delete" && *kind != userdata.KindHealth && *kind != userdata.KindGenetic:
		return fmt.Errorf("--kind must be health or genetic")
	}
	c, _, closeFn, err := adminClient(*path, stderr)
	if err != nil {
		return err
	}
	defer closeFn()
	a, err := findAccount(ctx, accounts.NewAccounts(c), *account)
	if err != nil {
		return fmt.Errorf("finding account %s: %w", *account, err)
	}
	data := userdata.NewData(c)
	if args[0] == "delete" {
		if *kind == userdata.KindHealth {
			_, err = data.DeleteHealth(ctx, &userdata.HealthDeleteRequest{AccountID: a.ID})
		} else {
			_, err = data.DeleteGenetic(ctx, &userdata.GeneticDeleteRequest{AccountID: a.ID})
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "deleted the %s data of %s\n", *kind, a.Email)
		return nil
	}
	req := &userdata.ImportRequest{AccountID: a.ID, Partial: *partial}
	file := *health
	switch {
	case file != "" && strings.EqualFold(filepath.Ext(file), ".json"):
		req.Kind, req.Format = userdata.KindHealth, userdata.FormatJSON
	case file != "":
		req.Kind, req.Format = userdata.KindHealth, userdata.FormatCSV
	default:
		req.Kind, req.Format, file = userdata.KindGenetic, userdata.FormatRaw, *genetic
	}
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("opening %s: %w", file, err)
	}
	defer f.Close()
	res, err := data.Import(ctx, req, f)
	if err != nil {
		return err
	}
	for _, e := range res.Errors {
		fmt.Fprintf(stderr, "%s:%d: %s\n", file, e.Line, e.Message)
	}
	if !res.Committed {
		return fmt.Errorf("%d invalid lines: nothing was imported (use --partial to keep the %d valid rows)", res.ErrorCount, res.Valid)
	}
	fmt.Fprintf(stdout, "imported %d %s rows for %s (%d new)\n", res.Written, req.Kind, a.Email, res.Inserted)
	return nil
}
