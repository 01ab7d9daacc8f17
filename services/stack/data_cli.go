package stack

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/vfs/userdata"
)

// dataUsage lists the data subcommands.
const dataUsage = "usage: mirobody data import --health FILE|--genetic FILE [--account ID|EMAIL] [--partial], " +
	"mirobody data ls [--account ID|EMAIL], mirobody data series --indicator NAME [--account ID|EMAIL], " +
	"or mirobody data delete --kind health|genetic|--import ID [--account ID|EMAIL]"

// runData lists, charts as text, imports or deletes user data for an
// account (the demo account by default), over NATS like the key commands.
// It is the command-line twin of /api/data (GET for the summary,
// /health/series, POST/DELETE /{health,genetic}, DELETE /imports/ID), on
// the same vfs-svc endpoints; vfs-svc announces a change, so gated tools
// appear or vanish for open MCP sessions.
func runData(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || !slices.Contains([]string{"import", "delete", "ls", "series"}, args[0]) {
		return errors.New(dataUsage)
	}
	fs := flag.NewFlagSet("mirobody data "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	account := fs.String("account", DemoEmail, "account id or email")
	path := fs.String("config", "", "config file")
	partial := fs.Bool("partial", false, "import: keep the valid rows when some lines are invalid")
	health := fs.String("health", "", "import: health series file, CSV (indicator,value,unit,time[,source]) or a JSON array")
	genetic := fs.String("genetic", "", "import: 23andMe or AncestryDNA raw data file")
	kind := fs.String("kind", "", "delete: every row of a kind, health or genetic")
	importID := fs.String("import", "", "delete: the rows of one import (ids from mirobody data ls)")
	indicator := fs.String("indicator", "", "series: the health indicator")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch {
	case args[0] == "import" && (*health == "") == (*genetic == ""):
		return fmt.Errorf("give exactly one of --health FILE or --genetic FILE")
	case args[0] == "delete" && (*kind == "") == (*importID == ""):
		return fmt.Errorf("give exactly one of --kind health|genetic or --import ID")
	case args[0] == "delete" && *kind != "" && *kind != userdata.KindHealth && *kind != userdata.KindGenetic:
		return fmt.Errorf("--kind must be health or genetic")
	case args[0] == "series" && *indicator == "":
		return fmt.Errorf("--indicator is required")
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
	switch args[0] {
	case "ls":
		return listData(ctx, data, a.ID, stdout)
	case "series":
		return printSeries(ctx, data, a.ID, *indicator, stdout)
	case "delete":
		return deleteData(ctx, data, a, *kind, *importID, stdout)
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
	in := bufio.NewReader(f)
	if head, _ := in.Peek(userdata.SniffBytes); userdata.NotText(head) != "" {
		return fmt.Errorf("%s is %s, not text: --health takes CSV (indicator,value,unit,time[,source]) or a JSON array, --genetic a 23andMe or AncestryDNA raw data file", file, userdata.NotText(head))
	}
	res, err := data.Import(ctx, req, in)
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

// listData prints the account's kinds, indicators and imports.
func listData(ctx context.Context, data *userdata.Data, account string, stdout io.Writer) error {
	sum, err := data.Summary(ctx, &userdata.SummaryRequest{AccountID: account})
	if err != nil {
		return err
	}
	if len(sum.Kinds) == 0 {
		fmt.Fprintln(stdout, "no data")
		return nil
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "KIND\tROWS\tFIRST\tLAST")
	for _, k := range sum.Kinds {
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\n", k.Kind, k.Rows, day(k.First), day(k.Last))
	}
	if len(sum.Indicators) > 0 {
		fmt.Fprintln(w, "\nINDICATOR\tROWS\tFIRST\tLAST\tUNIT")
		for _, i := range sum.Indicators {
			fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\n", i.Indicator, i.Count, day(&i.First), day(&i.Last), i.Unit)
		}
	}
	if len(sum.Imports) > 0 {
		fmt.Fprintln(w, "\nIMPORT\tKIND\tTIME\tROWS\tWRITTEN")
		for _, i := range sum.Imports {
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\n", i.ID, i.Kind, i.Time.Format(time.RFC3339), i.Rows, i.Written)
		}
	}
	return w.Flush()
}

// day formats an optional time as a date, "-" when absent.
func day(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.DateOnly)
}

// printSeries prints one indicator's measurements, oldest first.
func printSeries(ctx context.Context, data *userdata.Data, account, indicator string, stdout io.Writer) error {
	res, err := data.QueryHealth(ctx, &userdata.HealthQueryRequest{AccountID: account, Indicators: []string{indicator},
		Mode: userdata.HealthRows, Limit: 10000})
	if err != nil {
		return err
	}
	if len(res.Rows) == 0 {
		return fmt.Errorf("no %s measurements (mirobody data ls lists the indicators)", indicator)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TIME\tVALUE\tUNIT\tSOURCE")
	for _, r := range res.Rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", r.Time.Format(time.RFC3339), strconv.FormatFloat(r.Value, 'g', -1, 64), r.Unit, r.Source)
	}
	return w.Flush()
}

// deleteData deletes a whole kind or one import.
func deleteData(ctx context.Context, data *userdata.Data, a *accounts.Account, kind, importID string, stdout io.Writer) error {
	var res *userdata.DataDeleteResponse
	var err error
	switch {
	case importID != "":
		res, err = data.DeleteImport(ctx, &userdata.ImportDeleteRequest{AccountID: a.ID, ImportID: importID})
	case kind == userdata.KindHealth:
		res, err = data.DeleteHealth(ctx, &userdata.HealthDeleteRequest{AccountID: a.ID})
	default:
		res, err = data.DeleteGenetic(ctx, &userdata.GeneticDeleteRequest{AccountID: a.ID})
	}
	if err != nil {
		return err
	}
	what := "the " + kind + " data"
	if importID != "" {
		what = "import " + importID
	}
	fmt.Fprintf(stdout, "deleted %s of %s (%d rows)\n", what, a.Email, res.Deleted)
	return nil
}
