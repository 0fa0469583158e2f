package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/abacusdb/abacus/bench"
	"github.com/abacusdb/abacus/driver"
	"github.com/spf13/cobra"
)

// newBenchCmd returns `abacus bench`. It runs everything in this process
// (load generator, library, HTTP server on 127.0.0.1) against the embedded
// store or a Cassandra cluster, and needs no running Abacus server.
func newBenchCmd() *cobra.Command {
	var (
		cassandraHosts string
		keyspace       string
		rf             int
		consistency    string
		data           string
		noSync         bool
		concurrency    int
		duration       time.Duration
		warmup         time.Duration
		counters       []int
		scenarios      []string
		readShards     []int
		models         []string
		eventReads     []int
		markdown       bool
		asJSON         bool
		cpuProfile     string
		storePID       int
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure every counter model against Cassandra's native counters",
		Long: `Measure the counter models against the baseline they replace: Cassandra's
native counters, on the same session, at the same consistency, in the same run.

Scenarios (--scenarios):
  increments  sharded increments through the library on each --counters
              setting (1 = one hot counter; N = spread uniformly over N
              counters), then the same load as native counter updates
              (UPDATE <keyspace>.native_bench SET c = c + ? WHERE k = ?), then
              the same load on each --models model through the library:
              events (a new event per call), actor (each caller an actor
              setting its running count), cas (read + compare-and-set)
  http        sharded increments through an HTTP server started in this
              process on 127.0.0.1, driven by the Go client
  reads       for each --read-shards value N: reads of a counter with N live
              shards, and of one whose N shards GC folded into its tally
              (0 shards + tally); then reads of a native counter
  event-reads for each --event-reads value N: reads of an events counter
              holding N un-rolled events, then after one rollup folded them

Each run has --concurrency callers in a closed loop: --warmup (discarded),
then --duration measured. After each increments run the counters are read
back and compared with the acknowledged calls. The table shows throughput,
latency percentiles, errors, updates per shard write (group commit), the mean
shard write latency, and the cores used by this process, by the store (with
--store-pid) and by the whole machine: the load generator shares the machine
with the store, so read the CPU columns before the ratios.

Without --cassandra the embedded store runs in a temporary directory (or
--data) and the native baselines are skipped. On Cassandra the keyspace
(--keyspace) and the native_bench table are created when missing; every run
uses new counter names, so runs can share a keyspace. The global flags
(--server, --ns, ...) play no part: nothing talks to a running server.`,
		Example: `  abacus bench --duration 5s
  abacus bench --cassandra 127.0.0.1 --duration 20s --markdown
  abacus bench --cassandra 127.0.0.1 --scenarios reads --read-shards 1,10,100 --json`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if markdown && asJSON {
				return usagef("--markdown and --json exclude each other")
			}
			if concurrency < 1 {
				return usagef("--concurrency must be at least 1")
			}
			if duration <= 0 {
				return usagef("--duration must be positive")
			}
			if warmup < 0 {
				return usagef("--warmup must not be negative")
			}
			if storePID < 0 {
				return usagef("--store-pid must not be negative")
			}
			cl, err := driver.ParseConsistency(consistency)
			if err != nil || cl == driver.Default {
				return usagef("--consistency %q: want a level such as ONE, QUORUM or ALL", consistency)
			}
			var hosts []string
			for _, h := range strings.Split(cassandraHosts, ",") {
				if h = strings.TrimSpace(h); h != "" {
					hosts = append(hosts, h)
				}
			}
			opts := bench.Options{Concurrency: concurrency, Duration: duration, Warmup: warmup}
			if warmup == 0 {
				opts.Warmup = -1 // bench.Options reads 0 as "default"
			}
			cfg := bench.Config{
				Cassandra:         hosts,
				Keyspace:          keyspace,
				ReplicationFactor: rf,
				Consistency:       cl,
				DataDir:           data,
				NoSync:            noSync,
				Options:           opts,
				Counters:          counters,
				Scenarios:         scenarios,
				ReadShards:        readShards,
				Models:            models,
				EventReads:        eventReads,
				StorePID:          storePID,
				Progress:          cmd.ErrOrStderr(),
			}
			if err := cfg.Validate(); err != nil {
				return usagef("%v; see 'abacus bench --help'", err)
			}

			// Ctrl-C ends the current run early; the rows measured so far
			// are still printed.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			rep, runErr := bench.RunSuite(ctx, cfg)
			if rep == nil {
				return runErr
			}
			out := cmd.OutOrStdout()
			var werr error
			switch {
			case asJSON:
				werr = rep.WriteJSON(out)
			case markdown:
				werr = rep.WriteMarkdown(out)
			default:
				werr = rep.WriteText(out)
			}
			if runErr != nil {
				return fmt.Errorf("benchmark stopped early: %w", runErr)
			}
			return werr
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cassandraHosts, "cassandra", "", "comma-separated Cassandra contact points (host or host:port); default: the embedded store")
	fl.StringVar(&keyspace, "keyspace", bench.DefaultKeyspace, "Cassandra keyspace for the benchmark's counters, created when missing")
	fl.IntVar(&rf, "replication-factor", 1, "replication factor of the keyspace when it is created (SimpleStrategy)")
	fl.StringVar(&consistency, "consistency", "QUORUM", "consistency of every read and write, sharded and native alike")
	fl.StringVar(&data, "data", "", "embedded store directory (default: a temporary directory, removed afterwards)")
	fl.BoolVar(&noSync, "no-sync", false, "embedded store: acknowledge writes before they are fsynced")
	fl.IntVar(&concurrency, "concurrency", bench.DefaultConcurrency, "callers running operations back to back")
	fl.DurationVar(&duration, "duration", bench.DefaultDuration, "measured time of each scenario")
	fl.DurationVar(&warmup, "warmup", bench.DefaultWarmup, "unmeasured time before each scenario (0 for none)")
	fl.IntSliceVar(&counters, "counters", []int{1, 100}, "increments settings: spread updates uniformly over this many counters (1 = one hot counter)")
	fl.StringSliceVar(&scenarios, "scenarios", bench.Scenarios, "scenarios to run: "+strings.Join(bench.Scenarios, ", "))
	fl.IntSliceVar(&readShards, "read-shards", []int{1, 100, 1000}, "shards of the counters in the read scenarios (live, and folded by GC)")
	fl.StringSliceVar(&models, "models", bench.Models, "models measured next to sharded and native in the increments scenario: events, actor, cas (empty: none)")
	fl.IntSliceVar(&eventReads, "event-reads", []int{10, 1000, 100000}, "un-rolled events of the counters in the event-reads scenario")
	fl.BoolVar(&markdown, "markdown", false, "print the results as a Markdown table")
	fl.BoolVar(&asJSON, "json", false, "print the results as JSON (durations in nanoseconds)")
	fl.IntVar(&storePID, "store-pid", 0, "process id of a Cassandra node on this machine: record its CPU use per scenario (Linux), for throughput per store core")
	fl.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole benchmark to this file (for go tool pprof)")
	return cmd
}
