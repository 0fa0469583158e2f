package main

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/abacusdb/abacus/api"
	"github.com/spf13/cobra"
)

func (a *app) counterCmd() *cobra.Command {
	cmd := groupCmd("counter", "Update and read counters", `  abacus counter add likes 5
  abacus counter get likes`)
	cmd.AddCommand(a.counterAddCmd(), a.counterGetCmd())
	return cmd
}

func (a *app) counterAddCmd() *cobra.Command {
	var item string
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
retry with the same id once.`,
		Example: `  abacus counter add likes 5
  abacus counter add likes -2
  abacus --ns peaks counter add temperature 31
  abacus --ns visitors counter add daily alice
  abacus counter add likes 1 --request-id 7f3c9a`,
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
			id, err := c.Update(cmd.Context(), a.g.ns, name, req)
			if err != nil {
				return a.unknownOutcomeHint(err, id)
			}
			if a.g.json {
				return a.printJSON(api.UpdateResponse{Namespace: a.g.ns, Counter: name, RequestID: id, Acknowledged: true})
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&item, "item", "", "item to record in a distinct counter (instead of DELTA)")
	return cmd
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
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Print a counter's value",
		Long: `Print the value of the counter NAME in the namespace --ns: only the
number and a newline, so scripts can use it directly. A counter that was
never written prints 0. With --json the full reading is printed (type,
whether it is empty, how many shards were merged).`,
		Example: `  abacus counter get likes
  n=$(abacus counter get likes)
  abacus --ns visitors counter get daily --json`,
		Args: exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "" {
				return usagef("NAME is empty")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			v, err := c.Get(cmd.Context(), a.g.ns, args[0])
			if err != nil {
				return err
			}
			if a.g.json {
				return a.printJSON(v)
			}
			_, err = fmt.Fprintln(a.stdout, v.Value)
			return err
		},
	}
}
