package stack

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/vfs/audit"
)

// runAudit prints the tool-call audit log, newest first: one account's
// (the demo account by default), the twin of GET /api/audit, or with --all
// every account's, the operator's view that only the cli identity may
// read. It never shows argument values: the log holds none.
func runAudit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mirobody audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	account := fs.String("account", DemoEmail, "account id or email")
	all := fs.Bool("all", false, "every account's calls")
	limit := fs.Int("limit", 50, fmt.Sprintf("records to show, 1 to %d", audit.MaxLimit))
	before := fs.Int64("before", 0, "only records older than this id (the last ID of the previous page)")
	path := fs.String("config", "", "config file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("usage: mirobody audit [--account ID|EMAIL | --all] [--limit N] [--before ID]")
	}
	c, _, closeFn, err := adminClient(*path, stderr)
	if err != nil {
		return err
	}
	defer closeFn()
	req := &audit.QueryRequest{All: *all, Limit: *limit, Before: *before}
	if !*all {
		a, err := findAccount(ctx, accounts.NewAccounts(c), *account)
		if err != nil {
			return fmt.Errorf("finding account %s: %w", *account, err)
		}
		req.AccountID = a.ID
	}
	resp, err := audit.Query.Call(ctx, c, req)
	if err != nil {
		return err
	}
	if len(resp.Records) == 0 {
		fmt.Fprintln(stdout, "no tool calls")
		return nil
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	head := "ID\tTIME\tTOOL\tCALLER\tOUTCOME\tMS\tARG BYTES\tRESULT BYTES\tARGUMENTS"
	if *all {
		head = "ID\tTIME\tACCOUNT\tTOOL\tCALLER\tOUTCOME\tMS\tARG BYTES\tRESULT BYTES\tARGUMENTS"
	}
	fmt.Fprintln(w, head)
	for _, r := range resp.Records {
		caller := r.CallerKind
		if r.Agent != "" {
			caller += "/" + r.Agent
		}
		fmt.Fprintf(w, "%d\t%s\t", r.ID, r.Time.Format(time.RFC3339))
		if *all {
			acct := r.AccountID
			if acct == "" {
				acct = "-"
			}
			fmt.Fprintf(w, "%s\t", acct)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%.1f\t%d\t%d\t%s\n", r.Tool, caller, r.Outcome, r.DurationMS, r.ArgumentBytes, r.ResultBytes,
			strings.Join(r.ArgumentKeys, ","))
	}
	return w.Flush()
}
