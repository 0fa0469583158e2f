package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

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
		a.ledgerGetCmd(), a.ledgerHasCmd(), a.ledgerFindCmd(), a.ledgerDeleteCmd(),
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
nothing. If the outcome is unknown (a timeout, a lost connection), repeat
the command with the request id printed in the error: it is applied at most
once.`,
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
			if res.Applied {
				return a.printResult(res, "applied request "+res.RequestID)
			}
			return a.printResult(res, "request "+res.RequestID+" was already applied; nothing changed")
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
	case kind != "update" && v <= 0:
		return 0, usagef("AMOUNT of a %s must be positive, got %d (use 'abacus ledger update' for signed amounts)", kind, v)
	case v == 0:
		return 0, usagef("AMOUNT must not be zero")
	}
	return v, nil
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
