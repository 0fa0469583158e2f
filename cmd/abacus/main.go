package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/client"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// usageError marks errors in the command line itself.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// globals are the flags every client command shares.
type globals struct {
	server     string
	ns         string
	requestID  string
	json       bool   // -o json: set from output once the flags are read
	output     string // -o: "text" or "json"
	jsonFlag   bool   // --json, the older spelling of -o json
	timeout    time.Duration
	retries    int
	caFile     string
	certFile   string
	keyFile    string
	apiKeyFile string
}

// app carries what a command needs besides its flags; tests build one per
// run so they can run in parallel without touching the process environment.
type app struct {
	g      globals
	getenv func(string) string
	stdout io.Writer
	stderr io.Writer
}

// run executes the command line args and returns the exit status. Errors
// are reported on stderr as one line: "abacus: <message>".
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	a := &app{getenv: getenv, stdout: stdout, stderr: stderr}
	root := a.rootCmd()
	root.SetArgs(protectNegativeNumbers(root, args))
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "abacus: "+oneLine(a.describe(err)))
	return exitStatus(err)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// describe turns an error into the message users see.
func (a *app) describe(err error) string {
	var ce *client.Error
	switch {
	case errors.As(err, &ce):
		msg := ce.Message
		if ce.Code == "" {
			msg = fmt.Sprintf("the server at %s answered HTTP %d: %s", a.g.server, ce.Status, ce.Message)
		}
		return msg
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		msg := fmt.Sprintf("cannot reach the server at %s: %v", a.g.server, ue.Err)
		if ue.Timeout() {
			msg = fmt.Sprintf("the server at %s did not answer within --timeout %v", a.g.server, a.g.timeout)
		}
		return msg
	}
	return err.Error()
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "abacus",
		Short: "Counters that stay right under retries, crashes and node failures",
		Long: `abacus runs the Abacus server and talks to it.

Start a server with 'abacus serve' (an embedded store in ./abacus-data, or
Apache Cassandra with --cassandra), then count with 'abacus counter add'.

Every flag can also be set through the environment as ABACUS_<FLAG>, upper
case with '-' as '_' (for example ABACUS_SERVER, ABACUS_DATA,
ABACUS_READ_CONSISTENCY), or in a config file (--config): a YAML mapping
of flag names to values, such as "server: https://abacus.internal:7070".
A flag on the command line wins over the environment, which wins over the
file. --request-id is taken from the command line only.

` + exitStatusHelp,
		Example: `  abacus serve &
  abacus counter add likes 5
  abacus counter get likes
  abacus --server http://10.0.0.7:7070 namespace list`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          groupArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			// Where -o and --json came from decides which wins; once
			// applyEnv has set them, every set flag looks "changed".
			src := map[string]source{}
			for _, name := range []string{"output", "json"} {
				if cmd.Flags().Changed(name) {
					src[name] = fromCommandLine
				}
			}
			if err := a.applyEnv(cmd, src); err != nil {
				return err
			}
			return a.resolveOutput(src)
		},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usagef("%v; see '%s --help'", err, cmd.CommandPath())
	})
	pf := root.PersistentFlags()
	pf.StringVar(&a.g.server, "server", "http://127.0.0.1:7070", "URL of the Abacus server")
	pf.StringVar(&a.g.ns, "ns", "default", "namespace of the counters")
	pf.StringVar(&a.g.requestID, "request-id", "", "request id of an update: retrying with the same id counts it once (default: a new random id)")
	pf.String("config", "", "YAML file of flag values (default: $XDG_CONFIG_HOME/abacus/config.yaml or ~/.config/abacus/config.yaml, if it exists)")
	pf.StringVarP(&a.g.output, "output", "o", "text", "output format: text (one line, or a table for lists) or json")
	pf.BoolVar(&a.g.jsonFlag, "json", false, "print results as JSON (the same as -o json)")
	pf.DurationVar(&a.g.timeout, "timeout", 30*time.Second, "time limit for each request to the server")
	pf.StringVar(&a.g.caFile, "ca-file", "", "PEM CA certificates that sign an https:// server's certificate (default: the system's)")
	pf.StringVar(&a.g.certFile, "cert-file", "", "PEM client certificate, for a server that requires one (needs --key-file)")
	pf.StringVar(&a.g.keyFile, "key-file", "", "PEM private key of --cert-file")
	pf.StringVar(&a.g.apiKeyFile, "api-key-file", "", "file whose first line is the API key to send (or the key itself in $ABACUS_API_KEY; never on the command line, where process lists show it)")
	pf.IntVar(&a.g.retries, "retries", 0, "retry an update this many times after a network error or unknown outcome, with the same request id")

	root.AddCommand(a.versionCmd(), a.serveCmd(), a.migrateCmd(), a.counterCmd(), a.ledgerCmd(), a.namespaceCmd(), a.gcCmd(), a.queueCmd(), a.keyCmd(), newBenchCmd())
	return root
}

// source is where a flag's value came from; a higher one wins.
type source int

const (
	fromDefault source = iota
	fromConfigFile
	fromEnvironment
	fromCommandLine
)

func (s source) String() string {
	return [...]string{"defaults", "config file", "environment", "command line"}[s]
}

// resolveOutput checks -o and folds --json into it: the one given at the
// higher level wins (command line, environment, config file), and the two
// given at the same level must agree.
func (a *app) resolveOutput(src map[string]source) error {
	switch a.g.output {
	case "text", "json":
	default:
		return usagef("-o %q is not an output format; use text or json", a.g.output)
	}
	if a.g.jsonFlag {
		switch out, js := src["output"], src["json"]; {
		case out == js && a.g.output != "json":
			return usagef("--json and -o %s disagree (both from the %s); give one of them", a.g.output, out)
		case js >= out:
			a.g.output = "json"
		}
	}
	a.g.json = a.g.output == "json"
	return nil
}

// groupArgs refuses arguments to commands that only group subcommands.
func groupArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unknown command %q for %q; see '%s --help'", args[0], cmd.CommandPath(), cmd.CommandPath())
	}
	return nil
}

func groupCmd(use, short, example string) *cobra.Command {
	return &cobra.Command{
		Use:     use,
		Short:   short,
		Example: example,
		Args:    groupArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var names []string
			for _, c := range cmd.Commands() {
				if c.IsAvailableCommand() {
					names = append(names, c.Name())
				}
			}
			return usagef("%s needs a subcommand (%s); see '%s --help'", cmd.CommandPath(), strings.Join(names, ", "), cmd.CommandPath())
		},
	}
}

// exactArgs is cobra.ExactArgs with a usage error that names the arguments.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %s, got %d argument(s); see '%s --help'", cmd.CommandPath(), names, len(args), cmd.CommandPath())
		}
		return nil
	}
}

// noEnv lists flags that are never read from the environment or a config
// file: a request id (or a queue put's dedup id) left there would make
// every update (or put) after the first a "retry" of it.
var noEnv = map[string]bool{"help": true, "request-id": true, "dedup-id": true}

func envName(flag string) string {
	return "ABACUS_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applyEnv sets every flag not given on the command line from
// ABACUS_<FLAG>, or else from the config file (config.go).
//
// src, when not nil, records for "output" and "json" where they were set.
func (a *app) applyEnv(cmd *cobra.Command, src map[string]source) error {
	config, path, err := a.loadConfig(cmd)
	if err != nil {
		return err
	}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || noEnv[f.Name] || f.Name == "config" {
			return
		}
		name := envName(f.Name)
		v := a.getenv(name)
		if v == "" {
			if _, ok := config[f.Name]; ok {
				err = fromConfig(cmd, f, config, path)
				if src != nil {
					src[f.Name] = fromConfigFile
				}
			}
			return
		}
		if serr := cmd.Flags().Set(f.Name, v); serr != nil {
			err = usagef("invalid value %q in $%s: %v", v, name, serr)
		}
		if src != nil {
			src[f.Name] = fromEnvironment
		}
	})
	return err
}

func (a *app) client() (*client.Client, error) {
	return a.clientWithTimeout(a.g.timeout)
}

// clientWithTimeout is client with another time limit per request, for
// requests that may wait on the server (a queue receive).
func (a *app) clientWithTimeout(timeout time.Duration) (*client.Client, error) {
	opts := []client.Option{client.WithTimeout(timeout), client.WithRetries(a.g.retries)}
	tlsCfg, err := clientTLS(a.g.caFile, a.g.certFile, a.g.keyFile)
	if err != nil {
		return nil, err
	}
	if tlsCfg != nil {
		opts = append(opts, client.WithTLSConfig(tlsCfg))
	}
	key, err := secret(a.getenv("ABACUS_API_KEY"), "$ABACUS_API_KEY", a.g.apiKeyFile, "--api-key-file")
	if err != nil {
		return nil, err
	}
	if key != "" {
		opts = append(opts, client.WithAPIKey(key))
	}
	// $TRACEPARENT (as otel-cli and CI systems set it) makes this command's
	// requests part of the caller's trace.
	if tp := a.getenv("TRACEPARENT"); tp != "" {
		opts = append(opts, client.WithHeaders(func(_ context.Context, h http.Header) { h.Set("Traceparent", tp) }))
	}
	c, err := client.New(a.g.server, opts...)
	if err != nil {
		return nil, usagef("--server: %v", err)
	}
	return c, nil
}

// clientForName refuses an empty NAME argument as a usage error before it
// builds a client, so nothing is sent for it.
func (a *app) clientForName(name string) (*client.Client, error) {
	if name == "" {
		return nil, usagef("NAME is empty")
	}
	return a.client()
}

// printResult prints v under --json and plain (one line) otherwise:
// scripts read the plain line, programs the JSON.
func (a *app) printResult(v, plain any) error {
	if a.g.json {
		return a.printJSON(v)
	}
	_, err := fmt.Fprintln(a.stdout, plain)
	return err
}

// printJSONOr prints v under --json and otherwise leaves the output to
// text, the command's own human-readable form.
func (a *app) printJSONOr(v any, text func() error) error {
	if a.g.json {
		return a.printJSON(v)
	}
	return text()
}

// printIfJSON prints v under --json; otherwise the command succeeds
// silently, as a shell command whose exit status says it all.
func (a *app) printIfJSON(v any) error {
	return a.printJSONOr(v, func() error { return nil })
}

// printTable prints v under --json and otherwise a table: the header line
// (tab-separated), then the lines rows writes.
func (a *app) printTable(v any, header string, rows func(tw io.Writer)) error {
	return a.printJSONOr(v, func() error {
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, header)
		rows(tw)
		return tw.Flush()
	})
}

func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// unknownOutcomeHint tells the user how to settle an update whose outcome
// is unknown: a 503 unknown_outcome, or a request that may have reached the
// server before the connection failed. A failed dial sent nothing.
func (a *app) unknownOutcomeHint(err error, requestID string) error {
	var ce *client.Error
	var oe *net.OpError
	sent := (!errors.As(err, &oe) || oe.Op != "dial") && !client.RefusedByTLS(err)
	if client.IsCode(err, api.CodeUnknownOutcome) || (!errors.As(err, &ce) && sent) {
		return &unknownOutcomeError{fmt.Sprintf("%s; the update may or may not have been counted: repeat the command with --request-id %s to make sure it counts exactly once", a.describe(err), requestID)}
	}
	return err
}
