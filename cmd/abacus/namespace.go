package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/abacusdb/abacus/api"
	"github.com/spf13/cobra"
)

func (a *app) namespaceCmd() *cobra.Command {
	cmd := groupCmd("namespace", "Create and list namespaces", `  abacus namespace create visitors --type distinct
  abacus namespace list`)
	cmd.Aliases = []string{"ns"}
	cmd.AddCommand(a.namespaceCreateCmd(), a.namespaceGetCmd(), a.namespaceListCmd())
	return cmd
}

func (a *app) namespaceCreateCmd() *cobra.Command {
	var req api.CreateNamespaceRequest
	var lo api.LedgerOptions
	var claimTTL time.Duration
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a namespace",
		Long: `Create the namespace NAME. A namespace fixes how its counters are stored
(--model) and what they hold (--type); it cannot be changed later.

Types: sum (a signed total), max and min (the largest or smallest value
observed), distinct (an estimate of the number of distinct items).
Ledger namespaces (--model ledger) have no type; their options are
--history-length, --strict, --retry-count and --claim-ttl (see
'abacus ledger --help').
Consistency levels (ONE, QUORUM, ALL, LOCAL_QUORUM, ...) apply on Cassandra;
DEFAULT uses the server's configured level.`,
		Example: `  abacus namespace create visitors --type distinct
  abacus namespace create peaks --type max --write-consistency QUORUM
  abacus namespace create wallets --model ledger --strict --history-length 20`,
		Args: exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Name = args[0]
			fl := cmd.Flags()
			if strings.EqualFold(req.Model, "ledger") && !fl.Changed("type") {
				req.Type = ""
			}
			if fl.Changed("history-length") || fl.Changed("strict") || fl.Changed("retry-count") || fl.Changed("claim-ttl") {
				if claimTTL < 0 || claimTTL%time.Second != 0 {
					return usagef("--claim-ttl %v must be a positive whole number of seconds", claimTTL)
				}
				lo.ClaimTTLSeconds = int64(claimTTL / time.Second)
				req.Ledger = &lo
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			ns, err := c.CreateNamespace(cmd.Context(), req)
			if err != nil {
				return err
			}
			if a.g.json {
				return a.printJSON(ns)
			}
			if o := ns.Ledger; o != nil {
				_, err = fmt.Fprintf(a.stdout, "created namespace %s (model %s, history length %d, strict %v, retry count %d, claim TTL %v, read %s, write %s)\n",
					ns.Name, ns.Model, o.HistoryLength, o.Strict, o.RetryCount, time.Duration(o.ClaimTTLSeconds)*time.Second, ns.ReadConsistency, ns.WriteConsistency)
				return err
			}
			_, err = fmt.Fprintf(a.stdout, "created namespace %s (model %s, type %s, read %s, write %s)\n",
				ns.Name, ns.Model, ns.Type, ns.ReadConsistency, ns.WriteConsistency)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Model, "model", "sharded", "storage model: sharded (counters) or ledger")
	f.StringVar(&req.Type, "type", "sum", "counter type: sum, max, min or distinct (none for ledgers)")
	f.IntVar(&lo.HistoryLength, "history-length", 10, "ledger: request ids each server's actor keeps per side")
	f.BoolVar(&lo.Strict, "strict", false, "ledger: claim each request id with a lightweight transaction first")
	f.IntVar(&lo.RetryCount, "retry-count", 10, "ledger: resubmissions of a write with an unknown outcome (-1: none)")
	f.DurationVar(&claimTTL, "claim-ttl", 24*time.Hour, "ledger: lifetime of a strict-mode claim (whole seconds)")
	f.StringVar(&req.ReadConsistency, "read-consistency", "DEFAULT", "consistency level of reads")
	f.StringVar(&req.WriteConsistency, "write-consistency", "DEFAULT", "consistency level of writes")
	return cmd
}

func (a *app) namespaceGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "get NAME",
		Short:   "Describe one namespace",
		Example: "  abacus namespace get visitors\n  abacus namespace get visitors --json",
		Args:    exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			ns, err := c.Namespace(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if a.g.json {
				return a.printJSON(ns)
			}
			return a.namespaceTable([]api.Namespace{*ns})
		},
	}
}

func (a *app) namespaceListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List every namespace",
		Example: "  abacus namespace list\n  abacus namespace list --json",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			list, err := c.Namespaces(cmd.Context())
			if err != nil {
				return err
			}
			if a.g.json {
				return a.printJSON(api.NamespaceList{Namespaces: list})
			}
			return a.namespaceTable(list)
		},
	}
}

func (a *app) namespaceTable(list []api.Namespace) error {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tMODEL\tTYPE\tREAD\tWRITE\tCREATED")
	for _, ns := range list {
		// %q would be safer for odd names but uglier for the usual ones;
		// only quote names a terminal would mangle.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", displayName(ns.Name), ns.Model, ns.Type,
			ns.ReadConsistency, ns.WriteConsistency, ns.CreatedAt.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

func displayName(s string) string {
	for _, r := range s {
		if r < ' ' || r == 0x7f || r == '\t' || r == ' ' {
			return fmt.Sprintf("%q", s)
		}
	}
	return s
}
