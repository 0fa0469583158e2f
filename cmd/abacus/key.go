package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/abacusdb/abacus/api"
	"github.com/spf13/cobra"
)

func (a *app) keyCmd() *cobra.Command {
	cmd := groupCmd("key", "Make, list and revoke API keys", `  abacus key create --name billing --scope ns:wallets:write
  abacus key list
  abacus key revoke k3f9c2a1b7e4d8c06`)
	cmd.Long = `Make, list and revoke the API keys a server asks for when it listens beyond
loopback (serve --auth). These commands need a key with the scope *:admin:
the one printed at the server's first start, or one made with it.

A scope is ns:NAME:ROLE, queue:NAME:ROLE (NAME may be *) or *:ROLE, and
ROLE is read, write or admin, each including the ones before it: read
reads, write also changes counters, ledgers and messages, admin also
creates the namespace or queue, runs GC and requeues dead letters; *:admin
also manages keys. See docs/security.md.`
	cmd.AddCommand(a.keyCreateCmd(), a.keyListCmd(), a.keyRevokeCmd())
	return cmd
}

func (a *app) keyCreateCmd() *cobra.Command {
	var req api.CreateKeyRequest
	cmd := &cobra.Command{
		Use:   "create --scope SCOPE...",
		Short: "Make an API key and print its token, once",
		Long: `Make an API key with the given scopes and print its token on standard
output, alone on its line (or in "token" under -o json). The server keeps
only a hash of it: store it now, in a secret store.`,
		Example: `  abacus key create --scope ns:likes:write --name web
  abacus key create --scope 'ns:*:read' --scope queue:jobs:write --rate 100 --burst 200
  abacus key create --scope '*:admin' --name ops -o json`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(req.Scopes) == 0 {
				return usagef("give at least one --scope")
			}
			if req.RateLimit < 0 || req.Burst < 0 {
				return usagef("--rate and --burst must not be negative")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			k, err := c.CreateKey(cmd.Context(), req)
			if err != nil {
				return err
			}
			if a.g.json {
				return a.printJSON(k)
			}
			fmt.Fprintf(a.stderr, "made API key %s (%s); its token follows, shown this once\n", k.ID, strings.Join(k.Scopes, ", "))
			_, err = fmt.Fprintln(a.stdout, k.Token)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Name, "name", "", "a label for the key")
	f.StringArrayVar(&req.Scopes, "scope", nil, "a grant: ns:NAME:ROLE, queue:NAME:ROLE or *:ROLE (repeatable)")
	f.Float64Var(&req.RateLimit, "rate", 0, "requests per second the key may make on each server (0: no limit)")
	f.IntVar(&req.Burst, "burst", 0, "requests that may come at once (default: one second's worth of --rate)")
	return cmd
}

func (a *app) keyListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List the API keys (never their secrets)",
		Example: "  abacus key list\n  abacus key list -o json",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			keys, err := c.Keys(cmd.Context())
			if err != nil {
				return err
			}
			return a.printTable(keys, "ID\tNAME\tSCOPES\tRATE\tCREATED", func(tw io.Writer) {
				for _, k := range keys {
					rate := "-"
					if k.RateLimit > 0 {
						rate = fmt.Sprintf("%g/s (burst %d)", k.RateLimit, k.Burst)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, strings.Join(k.Scopes, ","), rate, k.CreatedAt.Format("2006-01-02 15:04:05Z07:00"))
				}
			})
		},
	}
}

func (a *app) keyRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke an API key",
		Long: `Revoke the API key ID. The server that answers refuses it at once, the
others within 10 seconds (they trust a key they checked for that long).`,
		Example: "  abacus key revoke k3f9c2a1b7e4d8c06",
		Args:    exactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.clientForName(args[0])
			if err != nil {
				return err
			}
			if err := c.RevokeKey(cmd.Context(), args[0]); err != nil {
				return err
			}
			return a.printResult(map[string]any{"id": args[0], "revoked": true}, "revoked API key "+args[0])
		},
	}
}
