package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/client"
	"github.com/spf13/cobra"
)

func (a *app) ledgerCmd() *cobra.Command {
	cmd := groupCmd("ledger", "Credit, debit and read ledgers (retries recognised on any server)", `  abacus ledger credit alice 50 --request-id order-1001
  abacus ledger get alice`)
	cmd.Long = `Ledgers are signed totals whose every change carries a request id. A
change retried with the same request id is applied once, whichever servers
its copies reach and whenever they arrive, while its claim lives (the default
mode, exact). A namespace made with --mode concurrent_retries_may_double skips
the claim: a retry is then recognised only while the request is among the
last history_length changes of the server that applied it, and copies running
at the same moment on two servers may both be applied.

Without --ns, ledgers live in the namespace "ledgers", created on first use.
Create other ledger namespaces with 'abacus namespace create NAME --model
ledger' (options --mode, --history-length, --retry-count, --claim-ttl).`
	cmd.AddCommand(
		a.ledgerUpdateCmd("credit", "Add a positive amount to a ledger"),
		a.ledgerUpdateCmd("debit", "Subtract a positive amount from a ledger"),
		a.ledgerUpdateCmd("update", "Add a signed amount to a ledger (negative debits)"),
		a.ledgerTransferCmd(), a.ledgerBatchCmd(), a.ledgerGetCmd(), a.ledgerHistoryCmd(), a.ledgerHasCmd(), a.ledgerFindCmd(), a.ledgerDeleteCmd(),
	)
	return cmd
}

// ledgerNS is the namespace for ledger commands: --ns when given (on the
// command line or in $ABACUS_NS), else the server's default ledger
// namespace. The global default "default" holds counters, not ledgers.
func (a *app) ledgerNS(cmd *cobra.Command) string {
	if f := cmd.Flag("ns"); f != nil && f.Changed {
		return a.g.ns
	}
	return api.DefaultLedgerNamespace
}

func (a *app) ledgerUpdateCmd(kind, short string) *cobra.Command {
	amountRule := "AMOUNT must be a positive whole number."
	example := fmt.Sprintf("  abacus ledger %[1]s alice 50 --request-id order-1001\n  abacus --ns wallets ledger %[1]s bob 7", kind)
	if kind == "update" {
		amountRule = "AMOUNT is a signed whole number, not zero; negative amounts are debits."
		example = "  abacus ledger update alice -20 --request-id refund-77\n  abacus ledger update alice 5"
	}
	return &cobra.Command{
		Use:   kind + " NAME AMOUNT",
		Short: short,
		Long: short + ` NAME, once per request id. ` + amountRule + `

The change carries --request-id, or a new random id that is printed. If
the same request id was already applied the command says so and changes
nothing (with -o json: "applied": true, "replayed": true, the first
attempt's answer marked as a replay). If the outcome is unknown (a
timeout, a lost connection), repeat the command with the request id
printed in the error: it is applied at most once.

In a namespace made with --floor, a debit that would take the ledger below
the floor is refused (below_floor, exit 5) and nothing is written; one the
balance would cover while other servers hold it as rights to debit is
refused with rights_held (exit 6), and may succeed when repeated.`,
		Example: example,
		Args:    exactArgs(2, "NAME and AMOUNT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if name == "" {
				return usagef("NAME is empty")
			}
			amount, err := parseAmount(args[1], kind)
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			ns, id := a.ledgerNS(cmd), a.g.requestID
			if id == "" {
				id = client.NewRequestID()
			}
			var res *api.LedgerUpdateResponse
			switch kind {
			case "credit":
				res, err = c.Credit(cmd.Context(), ns, name, amount, id)
			case "debit":
				res, err = c.Debit(cmd.Context(), ns, name, amount, id)
			default:
				res, err = c.UpdateLedger(cmd.Context(), ns, name, api.LedgerUpdateRequest{Amount: amount, RequestID: id})
			}
			if err != nil {
				return a.unknownOutcomeHint(err, id)
			}
			if res.Replayed {
				return a.printResult(res, "request "+res.RequestID+" was already applied; nothing changed")
			}
			return a.printResult(res, "applied request "+res.RequestID)
		},
	}
}

func (a *app) ledgerTransferCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "transfer FROM TO AMOUNT",
		Short: "Move a positive amount from one ledger to another, once per request id",
		Long: `Move AMOUNT from ledger FROM to ledger TO of the same namespace, once per
request id. AMOUNT must be a positive whole number; FROM and TO must differ.
The debit of FROM and the credit of TO are written together: both are
applied or neither is.

The transfer carries --request-id, or a new random id that is printed; it is
a request id of both ledgers. If the same request id was already applied the
command says so and changes nothing. If the outcome is unknown, repeat the
command with the request id printed in the error: it is applied at most
once, both sides or neither.

In a namespace made with --floor, a transfer that would take FROM below the
floor is refused (below_floor, exit 5) and nothing is written to either
ledger.`,
		Example: "  abacus ledger transfer alice bob 25 --request-id pay-1001\n  abacus --ns wallets ledger transfer alice bob 7",
		Args:    exactArgs(3, "FROM, TO and AMOUNT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			from, to := args[0], args[1]
			switch {
			case from == "" || to == "":
				return usagef("FROM and TO must not be empty")
			case from == to:
				return usagef("FROM and TO are both %q: a transfer needs two ledgers", from)
			}
			amount, err := parseAmount(args[2], "transfer")
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			id := a.g.requestID
			if id == "" {
				id = client.NewRequestID()
			}
			res, err := c.Transfer(cmd.Context(), a.ledgerNS(cmd), from, api.LedgerTransferRequest{To: to, Amount: amount, RequestID: id})
			if err != nil {
				return a.unknownOutcomeHint(err, id)
			}
			if res.Replayed {
				return a.printResult(res, "transfer "+res.RequestID+" was already applied; nothing changed")
			}
			return a.printResult(res, fmt.Sprintf("moved %d from %s to %s (request %s)", amount, from, to, res.RequestID))
		},
	}
}

// parseAmount checks AMOUNT before anything is sent.
func parseAmount(s, kind string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, usagef("AMOUNT %s is out of range: it must fit in a signed 64-bit integer", s)
	case err != nil:
		return 0, usagef("AMOUNT %q is not a whole number", s)
	case kind == "transfer" && v <= 0:
		return 0, usagef("AMOUNT of a transfer must be positive, got %d", v)
	case kind != "update" && v <= 0:
		return 0, usagef("AMOUNT of a %s must be positive, got %d (use 'abacus ledger update' for signed amounts)", kind, v)
	case v == 0:
		return 0, usagef("AMOUNT must not be zero")
	case v == math.MinInt64:
		return 0, usagef("AMOUNT %d has no positive counterpart in a signed 64-bit integer; the lowest amount is %d", v, math.MinInt64+1)
	}
	return v, nil
}

func (a *app) ledgerBatchCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "batch [FILE]",
		Short: "Apply many ledger updates, one a line of FILE or standard input",
		Long: `Apply the ledger updates in FILE, or in standard input when FILE is absent
or "-", each once per its request id. Each line is one update:

  LEDGER AMOUNT [REQUEST_ID]

AMOUNT is a signed whole number, not zero; negative amounts are debits.
Fields are separated by spaces or tabs, so LEDGER and REQUEST_ID hold none;
empty lines and lines starting with # are skipped. Every ledger is in --ns
(without --ns, in the namespace "ledgers"). A line without REQUEST_ID gets
a new random id, which is printed.

Every line is checked before anything is sent: a bad line stops the command
with its line number, and nothing is applied. The updates go in requests of
up to 1000, each checked by the server as a whole: if one of its updates is
invalid (a missing namespace, say), none of them is applied and the command
stops there. Updates of one ledger share their writes, so a batch costs far
less than as many 'abacus ledger update' commands.

One line is printed per update, in order:

  applied LEDGER AMOUNT REQUEST_ID
  already-applied LEDGER AMOUNT REQUEST_ID
  error LEDGER AMOUNT REQUEST_ID CODE: MESSAGE

already-applied is a retry: the request id was applied before and nothing
changed. Fields 2 to 4 are the update as an input line, so failed updates
can be sent again: one whose outcome is unknown (error unknown_outcome) is
applied at most once when sent again with its request id (--retries does
that for you). With -o json the results are printed as a JSON array. If any
update failed, the exit status is that of the first failure.`,
		Example: `  abacus ledger batch transfers.txt
  printf 'alice -20 t-77-out\nbob 20 t-77-in\n' | abacus ledger batch
  abacus --ns wallets ledger batch payouts.txt -o json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("%s takes at most one FILE, got %d arguments; see '%s --help'", cmd.CommandPath(), len(args), cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.g.requestID != "" {
				return usagef("--request-id does not apply to a batch: give each line its REQUEST_ID")
			}
			in, name := cmd.InOrStdin(), "standard input"
			if len(args) == 1 && args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return usagef("cannot read the updates: %v", err)
				}
				defer f.Close()
				in, name = f, args[0]
			}
			lines, err := parseLedgerBatch(in, name, a.ledgerNS(cmd))
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			results := make([]api.LedgerBatchResult, 0, len(lines))
			for start := 0; start < len(lines); start += api.MaxBatchItems {
				chunk := lines[start:min(start+api.MaxBatchItems, len(lines))]
				updates := make([]api.LedgerBatchUpdate, len(chunk))
				for i, l := range chunk {
					updates[i] = l.update
				}
				res, err := c.UpdateLedgers(cmd.Context(), updates)
				if err != nil {
					return a.ledgerBatchStopped(err, lines, results, chunk)
				}
				results = append(results, res...)
			}
			if err := a.printLedgerBatch(lines, results); err != nil {
				return err
			}
			return ledgerBatchFailures(lines, results)
		},
	}
}

// batchLine is an update of 'ledger batch' and the number of its line.
type batchLine struct {
	n      int
	update api.LedgerBatchUpdate
}

// parseLedgerBatch reads every line before anything is sent, so that a bad
// line refuses the whole input rather than a part of it after the rest
// was applied. Lines without a request id get one here, so that the output
// can tell which id to send again with.
func parseLedgerBatch(r io.Reader, name, ns string) ([]batchLine, error) {
	var out []batchLine
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if !utf8.ValidString(text) {
			return nil, usagef("line %d is not valid UTF-8", n)
		}
		f := strings.Fields(text)
		if len(f) < 2 || len(f) > 3 {
			return nil, usagef("line %d has %d field(s); want LEDGER AMOUNT [REQUEST_ID]", n, len(f))
		}
		if err := abacus.ValidateName("ledger", f[0]); err != nil {
			return nil, usagef("line %d: %v", n, err)
		}
		amount, err := parseAmount(f[1], "update")
		if err != nil {
			return nil, usagef("line %d: %v", n, err)
		}
		u := api.LedgerBatchUpdate{Namespace: ns, Ledger: f[0], Amount: amount, RequestID: client.NewRequestID()}
		if len(f) == 3 {
			if len(f[2]) > api.MaxNameLen {
				return nil, usagef("line %d: REQUEST_ID is %d bytes, the limit is %d", n, len(f[2]), api.MaxNameLen)
			}
			u.RequestID = f[2]
		}
		out = append(out, batchLine{n, u})
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return nil, usagef("line %d of %s is longer than %d bytes", n+1, name, bufio.MaxScanTokenSize)
	case err != nil:
		return nil, usagef("reading the updates from %s: %v", name, err)
	}
	return out, nil
}

func (a *app) printLedgerBatch(lines []batchLine, results []api.LedgerBatchResult) error {
	return a.printJSONOr(results, func() error {
		for i, r := range results {
			u := lines[i].update
			line := fmt.Sprintf("%s %d %s", u.Ledger, u.Amount, r.RequestID)
			switch {
			case r.Error != nil:
				line = fmt.Sprintf("error %s %s: %s", line, r.Error.Code, oneLine(r.Error.Message))
			case r.Replayed:
				line = "already-applied " + line
			default:
				line = "applied " + line
			}
			if _, err := fmt.Fprintln(a.stdout, line); err != nil {
				return err
			}
		}
		return nil
	})
}

// ledgerBatchFailures is the error of a batch whose updates were all
// answered: it exits as the first failed update would have alone.
func ledgerBatchFailures(lines []batchLine, results []api.LedgerBatchResult) error {
	failed, first := 0, -1
	for i, r := range results {
		if r.Error != nil {
			failed++
			if first < 0 {
				first = i
			}
		}
	}
	if failed == 0 {
		return nil
	}
	e := results[first].Error
	return &client.Error{Status: api.Status(e.Code), Code: e.Code, Message: fmt.Sprintf(
		"%d of %d updates failed (the error lines); the first, line %d: %s: %s", failed, len(results), lines[first].n, e.Code, e.Message)}
}

// ledgerBatchStopped reports a request of a batch that failed as a whole:
// the updates of the requests before it are printed, since they were
// applied, and none after it was sent.
func (a *app) ledgerBatchStopped(err error, lines []batchLine, done []api.LedgerBatchResult, chunk []batchLine) error {
	first, last := chunk[0].n, chunk[len(chunk)-1].n
	var notSent string
	if len(done)+len(chunk) < len(lines) {
		notSent = fmt.Sprintf("; the lines after line %d were not sent", last)
	}
	// unknownOutcomeHint tells, as for a single update, whether the request
	// may have been applied; its advice on --request-id does not fit here.
	var uo *unknownOutcomeError
	if errors.As(a.unknownOutcomeHint(err, ""), &uo) {
		// The request may have been applied in part or in whole; each of
		// its updates is settled by sending it again with its request id,
		// so print them with their ids.
		msg := a.describe(err)
		for _, l := range chunk {
			u := l.update
			done = append(done, api.LedgerBatchResult{Namespace: u.Namespace, Ledger: u.Ledger, RequestID: u.RequestID,
				Error: &api.Error{Code: api.CodeUnknownOutcome, Message: msg}})
		}
		if perr := a.printLedgerBatch(lines, done); perr != nil {
			return perr
		}
		return &unknownOutcomeError{fmt.Sprintf("%s; the updates of lines %d to %d may or may not have been applied: send them again as printed, with their request ids, to apply each at most once%s",
			msg, first, last, notSent)}
	}
	if len(done) > 0 {
		if perr := a.printLedgerBatch(lines, done); perr != nil {
			return perr
		}
	}
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code == "" {
		if len(done) == 0 {
			return err // nothing was applied: the error as any command reports it
		}
		// The applied updates are printed above; the exit status must
		// still say that nothing more was sent, so retrying is safe.
		ce = &client.Error{Status: api.Status(api.CodeUnavailable), Code: api.CodeUnavailable, Message: a.describe(err)}
	}
	// The server names the offending update by its index in the request;
	// the user knows it by its line.
	refused := *ce
	if i, rest, ok := batchIndex(refused.Message); ok && i < len(chunk) {
		refused.Message = fmt.Sprintf("line %d: %s", chunk[i].n, rest)
	}
	if len(done) > 0 {
		refused.Message += fmt.Sprintf("; nothing from line %d on was applied, the updates printed were", first)
	}
	return &refused
}

// batchIndex splits a batch refusal's message, "updates[3]: ...", into the
// index and the rest.
func batchIndex(msg string) (int, string, bool) {
	rest, ok := strings.CutPrefix(msg, "updates[")
	if !ok {
		return 0, "", false
	}
	num, rest, ok := strings.Cut(rest, "]: ")
	i, err := strconv.Atoi(num)
	if !ok || err != nil {
		return 0, "", false
	}
	return i, rest, true
}

func (a *app) ledgerGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Print a ledger's value",
		Long: `Print the value of the ledger NAME (credits minus debits): only the number
and a newline. A ledger never written prints 0. With --json the credits,
debits and number of actor rows are printed too.`,
		Example: "  abacus ledger get alice\n  abacus --ns wallets ledger get bob --json",
		Args:    exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.clientForName(args[0])
			if err != nil {
				return err
			}
			v, err := c.LedgerValue(cmd.Context(), a.ledgerNS(cmd), args[0])
			if err != nil {
				return err
			}
			return a.printResult(v, v.Value)
		},
	}
}

func (a *app) ledgerHistoryCmd() *cobra.Command {
	var (
		limit int
		after string
		all   bool
	)
	cmd := &cobra.Command{
		Use:   "history NAME",
		Short: "List a ledger's entries, newest first",
		Long: `List the entries of the ledger NAME, newest first: when each was written,
its signed amount, its request id and the server actor that applied it.
Every request that counts in the ledger's value is listed once, for the
namespace's entry retention (30 days unless the namespace was made with
--entry-retention); retries and refused requests are not listed.

One page of up to --limit entries is printed. When more follow, the last
line on stderr gives the --after that continues; --all follows every page.`,
		Example: `  abacus ledger history alice
  abacus --ns wallets ledger history bob --limit 20 --json
  abacus ledger history alice --all`,
		Args: exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 || limit > abacus.MaxLedgerHistoryPage {
				return usagef("--limit %d is not a number from 1 to %d", limit, abacus.MaxLedgerHistoryPage)
			}
			c, err := a.clientForName(args[0])
			if err != nil {
				return err
			}
			ns := a.ledgerNS(cmd)
			h, err := c.LedgerHistory(cmd.Context(), ns, args[0], after, limit)
			if err != nil {
				return err
			}
			if a.g.json {
				// One JSON document: the pages' entries together.
				for all && h.Next != "" {
					more, err := c.LedgerHistory(cmd.Context(), ns, args[0], h.Next, limit)
					if err != nil {
						return err
					}
					h.Entries, h.Next = append(h.Entries, more.Entries...), more.Next
				}
				return a.printJSON(h)
			}
			// Text goes out a page at a time, so --all over a long
			// history holds one page in memory, not all of them.
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AT\tAMOUNT\tREQUEST_ID\tACTOR")
			for {
				for _, e := range h.Entries {
					fmt.Fprintf(tw, "%s\t%+d\t%s\t%s\n", e.At.Format("2006-01-02T15:04:05.000000Z"), e.Amount, e.RequestID, e.Actor)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				if !all || h.Next == "" {
					break
				}
				if h, err = c.LedgerHistory(cmd.Context(), ns, args[0], h.Next, limit); err != nil {
					return err
				}
			}
			if h.Next != "" {
				_, err = fmt.Fprintf(a.stderr, "more entries: continue with --after %s\n", h.Next)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.IntVar(&limit, "limit", 100, "entries per page (1 to 1000)")
	f.StringVar(&after, "after", "", "continue after this cursor (printed when a page has more)")
	f.BoolVar(&all, "all", false, "follow every page to the end of the history")
	return cmd
}

func (a *app) ledgerHasCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "has NAME REQUEST_ID",
		Short: "Tell whether a retry of a request would be recognised",
		Long: `Print true if REQUEST_ID is in the history of one of the ledger's actors
(a retry of it would be recognised and not applied again), false otherwise.
A request applied long ago may have left the history: false does not mean
it was never applied.`,
		Example: "  abacus ledger has alice order-1001",
		Args:    exactArgs(2, "NAME and REQUEST_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "" || args[1] == "" {
				return usagef("NAME and REQUEST_ID must not be empty")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			ns := a.ledgerNS(cmd)
			known, err := c.HasRequestID(cmd.Context(), ns, args[0], args[1])
			if err != nil {
				return err
			}
			return a.printResult(api.RequestIDStatus{Namespace: ns, Ledger: args[0], RequestID: args[1], Known: known}, known)
		},
	}
}

func (a *app) ledgerFindCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "find NAME",
		Short: "Merge a ledger, fold the server's own history and print the value",
		Long: `Read the ledger NAME, let the server fold its own actor's history down to
history_length (the oldest request ids move into its total and are
forgotten) and write it back, then print the value.`,
		Example: "  abacus ledger find alice",
		Args:    exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.clientForName(args[0])
			if err != nil {
				return err
			}
			v, err := c.FindLedger(cmd.Context(), a.ledgerNS(cmd), args[0])
			if err != nil {
				return err
			}
			return a.printResult(v, v.Value)
		},
	}
}

func (a *app) ledgerDeleteCmd() *cobra.Command {
	var cmd *cobra.Command
	cmd = a.deleteCmd(&cobra.Command{
		Short: "Delete a ledger",
		Long: `Delete the ledger NAME: its balance and the request ids it remembers. The
delete takes effect a moment later, at the time it prints (the server's
delete delay, 3m by default); from then on the ledger starts from zero,
and a retry of a request made before then is applied again to it. It
needs an API key with the admin role on the namespace.`,
		Example: "  abacus ledger delete alice",
	}, "ledger", func(ctx context.Context, c *client.Client, name string) (*api.DeleteResponse, error) {
		return c.DeleteLedger(ctx, a.ledgerNS(cmd), name)
	})
	return cmd
}
