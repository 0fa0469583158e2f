package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/client"
	"github.com/spf13/cobra"
)

func (a *app) namespaceCmd() *cobra.Command {
	cmd := groupCmd("namespace", "Create, list and delete namespaces", `  abacus namespace create visitors --type distinct
  abacus namespace list
  abacus namespace delete visitors`)
	cmd.Aliases = []string{"ns"}
	cmd.AddCommand(a.namespaceCreateCmd(), a.namespaceGetCmd(), a.namespaceListCmd(), a.namespaceDeleteCmd())
	return cmd
}

func (a *app) namespaceCreateCmd() *cobra.Command {
	var req api.CreateNamespaceRequest
	var lo api.LedgerOptions
	var claimTTL, ttl, entryRetention, actorMaxAge time.Duration
	var floor int64
	var eo struct{ bucket, window, seal, delay, future time.Duration }
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a namespace",
		Long: `Create the namespace NAME. A namespace fixes how its counters are stored
(--model) and what they hold (--type); it cannot be changed later.

Models:
  sharded  (default) a shard per server, merged on read; retries to the
           same server count once
  events   one row per increment keyed by its request id: retries count
           once from any server within the accept window; add-and-get,
           clear; options --bucket, --accept-window, --seal,
           --rollup-delay, --future-limit
  actor    each actor sets its absolute value at a version ('abacus counter
           set'); the counter is the sum of the latest values
  ledger   credits and debits with per-actor request history ('abacus ledger')
  native   a Cassandra counter column (an atomic add on the embedded store):
           the baseline; a retried add may count twice
  cas      read then compare-and-set (a lightweight transaction): the other
           baseline; a retried add may count twice
Types (sharded only; the other counter models are sums): sum (a signed
total), max and min (the largest or smallest value observed), distinct (an
estimate of the number of distinct items).
Ledger namespaces (--model ledger) have no type; their options are
--mode, --history-length, --retry-count, --claim-ttl, --entry-retention and --floor
(see 'abacus ledger --help').
Consistency levels (ONE, QUORUM, ALL, LOCAL_QUORUM, ...) apply on Cassandra;
DEFAULT uses the server's configured level.
--ttl makes every counter start again from zero at each multiple of it
since the Unix epoch (UTC), as in "requests this hour"; what ended is
purged in the background. A ledger with a TTL forgets its balance and its
request ids at each period's end.`,
		Example: `  abacus namespace create visitors --type distinct
  abacus namespace create peaks --type max --write-consistency QUORUM
  abacus namespace create wallets --model ledger --history-length 20
  abacus namespace create accounts --model ledger --floor 0
  abacus namespace create wallets-hourly --model ledger --actor-max-age 1h
  abacus namespace create likes --model events --accept-window 2h
  abacus namespace create orders --model actor
  abacus namespace create hourly-requests --ttl 1h`,
		Args: exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Name = args[0]
			fl := cmd.Flags()
			if fl.Changed("ttl") {
				if ttl < time.Minute || ttl%time.Second != 0 {
					return usagef("--ttl %v must be a whole number of seconds, at least 1m", ttl)
				}
				req.TTLSeconds = int64(ttl / time.Second)
			}
			if !strings.EqualFold(req.Model, "sharded") && !fl.Changed("type") {
				req.Type = ""
			}
			if fl.Changed("bucket") || fl.Changed("accept-window") || fl.Changed("seal") || fl.Changed("rollup-delay") || fl.Changed("future-limit") {
				if !strings.EqualFold(req.Model, "events") {
					return usagef("--bucket, --accept-window, --seal, --rollup-delay and --future-limit apply to --model events only")
				}
				opts := &api.EventsOptions{}
				for _, f := range []struct {
					name string
					d    time.Duration
					dst  *int64
				}{
					{"bucket", eo.bucket, &opts.BucketSeconds}, {"accept-window", eo.window, &opts.AcceptWindowSeconds}, {"seal", eo.seal, &opts.SealSeconds},
					{"rollup-delay", eo.delay, &opts.RollupDelaySeconds}, {"future-limit", eo.future, &opts.FutureLimitSeconds},
				} {
					if f.d < 0 || f.d%time.Second != 0 {
						return usagef("--%s %v must be a whole number of seconds, not negative", f.name, f.d)
					}
					*f.dst = int64(f.d / time.Second)
				}
				req.Events = opts
			}
			if fl.Changed("history-length") || fl.Changed("mode") || fl.Changed("strict") || fl.Changed("retry-count") || fl.Changed("claim-ttl") || fl.Changed("entry-retention") || fl.Changed("floor") || fl.Changed("actor-max-age") {
				if claimTTL < 0 || claimTTL%time.Second != 0 {
					return usagef("--claim-ttl %v must be a positive whole number of seconds", claimTTL)
				}
				lo.ClaimTTLSeconds = int64(claimTTL / time.Second)
				switch {
				case entryRetention == 0:
					lo.EntryRetentionSeconds = -1 // keep no history
				case entryRetention < time.Second || entryRetention%time.Second != 0:
					return usagef("--entry-retention %v must be a whole number of seconds, or 0 for no history", entryRetention)
				default:
					lo.EntryRetentionSeconds = int64(entryRetention / time.Second)
				}
				switch {
				case actorMaxAge == 0:
					lo.ActorMaxAgeSeconds = -1 // actors never retire; nothing folds
				case actorMaxAge < time.Second || actorMaxAge%time.Second != 0:
					return usagef("--actor-max-age %v must be a whole number of seconds, or 0 for actors that never retire", actorMaxAge)
				default:
					lo.ActorMaxAgeSeconds = int64(actorMaxAge / time.Second)
				}
				if fl.Changed("floor") {
					if floor > 0 {
						return usagef("--floor %d must be 0 or negative", floor)
					}
					lo.Floor = &floor
				}
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
			if o := ns.Ledger; o != nil {
				retention := "none"
				if o.EntryRetentionSeconds > 0 {
					retention = secs(o.EntryRetentionSeconds).String()
				}
				floorNote := "none"
				if o.Floor != nil {
					floorNote = strconv.FormatInt(*o.Floor, 10)
				}
				age := "actors never retire (no folding)"
				if o.ActorMaxAgeSeconds > 0 {
					age = "actors retire after " + secs(o.ActorMaxAgeSeconds).String()
				}
				return a.printResult(ns, fmt.Sprintf("created namespace %s (model %s, mode %s, history length %d, retry count %d, claim TTL %v, entry retention %s, floor %s, %s, read %s, write %s)",
					ns.Name, ns.Model, o.Mode, o.HistoryLength, o.RetryCount, time.Duration(o.ClaimTTLSeconds)*time.Second, retention, floorNote, age, ns.ReadConsistency, ns.WriteConsistency))
			}
			if o := ns.Events; o != nil {
				return a.printResult(ns, fmt.Sprintf("created namespace %s (model %s, bucket %v, accept window %v, seal %v, rollup delay %v, future limit %v, read %s, write %s)",
					ns.Name, ns.Model, secs(o.BucketSeconds), secs(o.AcceptWindowSeconds), secs(o.SealSeconds), secs(o.RollupDelaySeconds), secs(o.FutureLimitSeconds), ns.ReadConsistency, ns.WriteConsistency))
			}
			ttlNote := ""
			if ns.TTLSeconds > 0 {
				ttlNote = fmt.Sprintf(", TTL %v", secs(ns.TTLSeconds))
			}
			return a.printResult(ns, fmt.Sprintf("created namespace %s (model %s, type %s%s, read %s, write %s)",
				ns.Name, ns.Model, ns.Type, ttlNote, ns.ReadConsistency, ns.WriteConsistency))
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Model, "model", "sharded", "storage model: sharded, events, actor, ledger, native or cas")
	f.StringVar(&req.Type, "type", "sum", "counter type of a sharded namespace: sum, max, min or distinct")
	f.DurationVar(&eo.bucket, "bucket", 10*time.Minute, "events: width of the time buckets events and seals are stored in")
	f.DurationVar(&eo.window, "accept-window", time.Hour, "events: the de-duplication horizon: how long after its time a retry is recognised (at most 24h)")
	f.DurationVar(&eo.seal, "seal", 4*time.Second, "events: how long after its time a new increment can be acknowledged; older ones are answered from their seal")
	f.DurationVar(&eo.delay, "rollup-delay", 2*time.Second, "events: margin rollups keep behind the seal (at least the clock skew between servers)")
	f.DurationVar(&eo.future, "future-limit", time.Minute, "events: how far ahead of the server's clock an event time may be")
	f.IntVar(&lo.HistoryLength, "history-length", 10, "ledger: request ids each server's actor keeps per side")
	f.StringVar(&lo.Mode, "mode", api.LedgerModeExact, "ledger: how retries are recognised: exact (a lightweight transaction claims each request id) or concurrent_retries_may_double (no claim; copies of one request on two servers at once may both apply)")
	f.BoolVar(&lo.Strict, "strict", false, "ledger: the older spelling of --mode exact")
	_ = f.MarkDeprecated("strict", "exact is the default mode now; use --mode")
	f.IntVar(&lo.RetryCount, "retry-count", 10, "ledger: resubmissions of a write with an unknown outcome (-1: none)")
	f.DurationVar(&claimTTL, "claim-ttl", 24*time.Hour, "ledger: lifetime of an exact-mode claim (whole seconds)")
	f.Int64Var(&floor, "floor", 0, "ledger: the lowest balance a debit may leave (0: a wallet; negative: an overdraft line); without it, no floor")
	f.DurationVar(&actorMaxAge, "actor-max-age", 24*time.Hour, "ledger: how long each server's actor writes before a fresh one replaces it; retired actors' rows are folded so reads stay cheap (whole seconds, at least 1m; 0: actors never retire, nothing folds)")
	f.DurationVar(&entryRetention, "entry-retention", 30*24*time.Hour, "ledger: how long 'abacus ledger history' lists an entry (whole seconds; 0: keep no history)")
	f.DurationVar(&ttl, "ttl", 0, "length of the periods counters live in (whole seconds, at least 1m; 0: until deleted)")
	f.StringVar(&req.ReadConsistency, "read-consistency", "DEFAULT", "consistency level of reads")
	f.StringVar(&req.WriteConsistency, "write-consistency", "DEFAULT", "consistency level of writes")
	return cmd
}

func secs(n int64) time.Duration { return time.Duration(n) * time.Second }

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
			return a.namespaceTable(ns, []api.Namespace{*ns})
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
			return a.namespaceTable(api.NamespaceList{Namespaces: list}, list)
		},
	}
}

// namespaceTable prints v under --json and otherwise list as a table.
func (a *app) namespaceTable(v any, list []api.Namespace) error {
	return a.printTable(v, "NAME\tMODEL\tTYPE\tREAD\tWRITE\tCREATED", func(tw io.Writer) {
		for _, ns := range list {
			// %q would be safer for odd names but uglier for the usual ones;
			// only quote names a terminal would mangle.
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", displayName(ns.Name), ns.Model, ns.Type,
				ns.ReadConsistency, ns.WriteConsistency, ns.CreatedAt.UTC().Format(time.RFC3339))
		}
	})
}

func displayName(s string) string {
	for _, r := range s {
		if r < ' ' || r == 0x7f || r == '\t' || r == ' ' {
			return fmt.Sprintf("%q", s)
		}
	}
	return s
}

func (a *app) namespaceDeleteCmd() *cobra.Command {
	return a.deleteCmd(&cobra.Command{
		Short: "Delete a namespace and every counter in it",
		Long: `Delete the namespace NAME and every counter or ledger in it. The delete
takes effect a moment later, at the time it prints (the server's delete
delay, 3m by default, so that every server learns of it first); from
then on the namespace is not found. Its data is purged in the background
after that, and then the name may be used again. The default namespaces
cannot be deleted.`,
		Example: `  abacus namespace delete visitors`,
	}, "namespace", func(ctx context.Context, c *client.Client, name string) (*api.DeleteResponse, error) {
		return c.DeleteNamespace(ctx, name)
	})
}

// deleteCmd completes cmd as "delete NAME": what (a namespace, counter or
// ledger) named NAME is deleted by del, and the answer says from when.
func (a *app) deleteCmd(cmd *cobra.Command, what string, del func(context.Context, *client.Client, string) (*api.DeleteResponse, error)) *cobra.Command {
	cmd.Use = "delete NAME"
	cmd.Args = exactArgs(1, "NAME")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c, err := a.clientForName(args[0])
		if err != nil {
			return err
		}
		res, err := del(cmd.Context(), c, args[0])
		if err != nil {
			return err
		}
		return a.printResult(res, fmt.Sprintf("deleted %s %s, from %s", what, args[0], res.EffectiveAt.UTC().Format(time.RFC3339Nano)))
	}
	return cmd
}
