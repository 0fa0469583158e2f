package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func (a *app) gcCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "gc [NAME]",
		Short: "Fold the dead shards of counters into their tallies",
		Long: `Garbage-collect counters: fold the shards of writers that died more than
the GC grace period ago into each counter's tally, so reads merge fewer
shards. The server also does this in the background (serve --gc-interval).

With NAME, collect that counter of --ns. Without NAME, collect every
counter: of every namespace, or only of --ns when --ns is given.

A collection that cannot reach every replica is skipped and reported, not
treated as an error: reads are never affected.`,
		Example: `  abacus gc likes
  abacus gc
  abacus --ns visitors gc`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("gc takes at most one NAME, got %d arguments; see 'abacus gc --help'", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			if len(args) == 1 {
				res, err := c.GC(cmd.Context(), a.g.ns, args[0])
				if err != nil {
					return err
				}
				if res.Skipped {
					return a.printResult(res, "skipped: "+res.Error)
				}
				return a.printResult(res, fmt.Sprintf("folded %d shards", res.Folded))
			}
			ns := ""
			if cmd.Flags().Changed("ns") {
				ns = a.g.ns
			}
			res, err := c.GCAll(cmd.Context(), ns)
			if err != nil {
				return err
			}
			return a.printResult(res, fmt.Sprintf("collected %d counters: folded %d shards, skipped %d counters", res.Counters, res.Folded, res.Skipped))
		},
	}
}
