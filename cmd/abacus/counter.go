package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/client"
	"github.com/spf13/cobra"
)

func (a *app) counterCmd() *cobra.Command {
	cmd := groupCmd("counter", "Update and read counters", `  abacus counter add likes 5
  abacus counter get likes
  abacus --ns orders counter set open-qty order-17 2 1500
  abacus --ns likes counter clear post-9
  abacus --ns likes counter list`)
	cmd.AddCommand(a.counterAddCmd(), a.counterGetCmd(), a.counterSetCmd(), a.counterClearCmd(), a.counterDeleteCmd(), a.counterListCmd())
	return cmd
}

func (a *app) counterListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the counters of a namespace (--ns)",
		Long: `List the names of the counters in the namespace --ns, one per line, sorted
(its ledgers, in a ledger namespace). The server scans every counter of
the namespace's model to answer: for consoles and scripts, not for each
request.`,
		Example: "  abacus --ns likes counter list\n  abacus --ns likes counter list -o json",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			names, err := c.Counters(cmd.Context(), a.g.ns)
			if err != nil {
				return err
			}
			return a.printJSONOr(names, func() error {
				for _, n := range names {
					if _, err := fmt.Fprintln(a.stdout, n); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
}

func (a *app) counterAddCmd() *cobra.Command {
	var item, at string
	var get bool
	cmd := &cobra.Command{
		Use:   "add NAME DELTA | add NAME ITEM | add NAME --item ITEM",
		Short: "Add to a counter (or record an item in a distinct counter)",
		Long: `Add DELTA to the counter NAME in the namespace --ns.

For sum counters DELTA is added (it may be negative); for max and min
counters it is the observed value. For distinct counters the second
argument is the item to count (or give it with --item).

The update is sent with a request id (a new random one unless --request-id
is given). If the outcome is unknown (a timeout, a lost connection), repeat
the command with the request id printed in the error: the server counts a
retry with the same id once. On an events namespace the request id is a
version 7 UUID whose time is the event's time (or give --time with any
id), and a retry counts once on any server within the accept window.

With --get the counter's value, read after the update, is printed.`,
		Example: `  abacus counter add likes 5
  abacus counter add likes -2
  abacus --ns peaks counter add temperature 31
  abacus --ns visitors counter add daily alice
  abacus counter add likes 1 --request-id 7f3c9a
  abacus --ns clicks counter add home 1 --get
  abacus --ns clicks counter add home 1 --request-id batch-7 --time 2026-11-22T09:30:00Z`,
		Args: func(cmd *cobra.Command, args []string) error {
			if item != "" {
				return exactArgs(1, "NAME when --item is given")(cmd, args)
			}
			return exactArgs(2, "NAME and DELTA (or ITEM)")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if name == "" {
				return usagef("NAME is empty")
			}
			req := api.UpdateRequest{Item: item, RequestID: a.g.requestID}
			if at != "" {
				t, err := time.Parse(time.RFC3339Nano, at)
				if err != nil {
					return usagef("--time %q is not an RFC 3339 time such as 2026-11-22T09:30:00Z", at)
				}
				req.Time = &t
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			if item == "" {
				// The default namespace is always a sum; others may count
				// distinct items, where the second argument is an item.
				distinct := false
				if a.g.ns != "default" {
					ns, err := c.Namespace(cmd.Context(), a.g.ns)
					if err != nil {
						return err
					}
					distinct = ns.Type == "distinct"
				}
				if distinct {
					req.Item = args[1]
				} else if req.Delta, err = parseDelta(args[1]); err != nil {
					return err
				}
			}
			if get {
				resp, err := c.UpdateAndGet(cmd.Context(), a.g.ns, name, req)
				if err != nil {
					return a.unknownOutcomeHint(err, resp.RequestID)
				}
				if a.g.json {
					return a.printJSON(resp)
				}
				if resp.Value == nil {
					why := "the server sent none"
					if resp.ValueError != nil {
						why = resp.ValueError.Message
					}
					return fmt.Errorf("the update was acknowledged (request id %s; do not resend it), but reading the value failed: %s", resp.RequestID, why)
				}
				_, err = fmt.Fprintln(a.stdout, valueText(resp.Value))
				return err
			}
			resp, err := c.UpdateWithResult(cmd.Context(), a.g.ns, name, req)
			if err != nil {
				return a.unknownOutcomeHint(err, resp.RequestID)
			}
			if a.g.json {
				return a.printJSON(resp)
			}
			if resp.Replayed {
				_, err = fmt.Fprintf(a.stdout, "already counted (request id %s): nothing added\n", resp.RequestID)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&item, "item", "", "item to record in a distinct counter (instead of DELTA)")
	cmd.Flags().StringVar(&at, "time", "", "events: the increment's event time (RFC 3339); default: the time in the request id")
	cmd.Flags().BoolVar(&get, "get", false, "print the counter's value read after the update (add-and-get)")
	return cmd
}

func (a *app) counterSetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "set NAME ACTOR VERSION VALUE",
		Short: "Set an actor's value of an actor counter",
		Long: `Set ACTOR's absolute VALUE of the counter NAME at VERSION, in a namespace
of model actor (--ns). The counter is the sum of every actor's value at
its highest version, whatever order sets arrive in, so repeating a set is
harmless. VERSION must be positive and must not be reused with another
value.`,
		Example: `  abacus --ns orders counter set open-qty order-17 1 1000
  abacus --ns orders counter set open-qty order-17 2 1500`,
		Args: exactArgs(4, "NAME, ACTOR, VERSION and VALUE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "" || args[1] == "" {
				return usagef("NAME and ACTOR must not be empty")
			}
			version, err := strconv.ParseInt(args[2], 10, 64)
			if err != nil || version <= 0 {
				return usagef("VERSION %q is not a positive whole number", args[2])
			}
			value, err := strconv.ParseInt(args[3], 10, 64)
			if err != nil {
				return usagef("VALUE %q is not a whole number in the int64 range", args[3])
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			if err := c.Set(cmd.Context(), a.g.ns, args[0], args[1], version, value); err != nil {
				return err
			}
			return a.printIfJSON(api.SetResponse{Namespace: a.g.ns, Counter: args[0], Actor: args[1], Version: version, Acknowledged: true})
		},
	}
}

func (a *app) counterClearCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "clear NAME",
		Short: "Reset a counter to zero",
		Long: `Reset the counter NAME in the namespace --ns to zero. Events counters
clear every increment whose time is at or before the clear's time (the
time in --request-id, or now); repeating the clear with the same
--request-id is the same clear, and the counter takes increments at once.
Cas counters are set to zero. Sharded, actor and native counters are
deleted instead ('abacus counter delete'): the reset takes effect a moment
later, at the time printed, and erases what was counted before then.`,
		Example: `  abacus --ns likes counter clear post-9`,
		Args:    exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.clientForName(args[0])
			if err != nil {
				return err
			}
			res, err := c.ClearAt(cmd.Context(), a.g.ns, args[0], a.g.requestID)
			if err != nil {
				return a.unknownOutcomeHint(err, res.RequestID)
			}
			return a.printResult(res, "cleared "+args[0]+", from "+res.EffectiveAt.UTC().Format(time.RFC3339Nano))
		},
	}
}

func (a *app) counterDeleteCmd() *cobra.Command {
	return a.deleteCmd(&cobra.Command{
		Short: "Delete a counter",
		Long: `Delete the counter NAME in the namespace --ns, of any model. The delete
takes effect a moment later, at the time it prints (the server's delete
delay, 3m by default, so that every server learns of it first): what was
counted before then is erased, and the counter starts again from zero.
Deleting again is harmless. The erased data is purged in the background.`,
		Example: `  abacus --ns likes counter delete post-9`,
	}, "counter", func(ctx context.Context, c *client.Client, name string) (*api.DeleteResponse, error) {
		return c.DeleteCounter(ctx, a.g.ns, name)
	})
}

// parseDelta checks DELTA before anything is sent.
func parseDelta(s string) (int64, error) {
	d, err := strconv.ParseInt(s, 10, 64)
	if err == nil {
		return d, nil
	}
	if errors.Is(err, strconv.ErrRange) {
		return 0, usagef("DELTA %s is out of range: it must be between -9223372036854775808 and 9223372036854775807", s)
	}
	return 0, usagef("DELTA %q is not a whole number", s)
}

func (a *app) counterGetCmd() *cobra.Command {
	var within time.Duration
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Print a counter's value",
		Long: `Print the value of the counter NAME in the namespace --ns: only the
number and a newline, so scripts can use it directly. A counter that was
never written prints 0. With --json the full reading is printed (type,
whether it is empty, how many shards were merged; for events counters
as_of, the time up to which the value is complete, and rolled_up_to).

--max-staleness lets the server answer an events counter from its memory
when what it holds is complete as of that long ago or later (cached is
then true in --json): a read as fast as a native counter's, seconds
stale at most.`,
		Example: `  abacus counter get likes
  n=$(abacus counter get likes)
  abacus --ns visitors counter get daily --json
  abacus --ns views counter get home --max-staleness 2s`,
		Args: exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if within < 0 {
				return usagef("--max-staleness %v is negative", within)
			}
			c, err := a.clientForName(args[0])
			if err != nil {
				return err
			}
			v, err := c.GetWithin(cmd.Context(), a.g.ns, args[0], within)
			if err != nil {
				return err
			}
			return a.printResult(v, valueText(v))
		},
	}
	cmd.Flags().DurationVar(&within, "max-staleness", 0, "events: answer from the server's memory if it is complete as of this long ago (0: read the store)")
	return cmd
}

// valueText is the value as printed: the exact sum when it lies outside
// the int64 range (the API's value is then only the nearest bound).
func valueText(v *api.Value) string {
	if v.Saturated && v.Exact != "" {
		return v.Exact
	}
	return strconv.FormatInt(v.Value, 10)
}
