package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/abacusdb/abacus/cmd/abacus/internal/bench"
	"github.com/abacusdb/abacus/driver"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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
		hotFraction    float64
		readRatio      float64
		reportDir      string
		scenarios      []string
		readShards     []int
		models         []string
		eventReads     []int
		sweep          []int
		sweepP99       time.Duration
		sweepGain      float64
		agingDays      int
		agingWriters   int
		agingReadTime  time.Duration
		steadyRates    []int
		steadyCounters int
		steadyEvery    time.Duration
		steadyStale    time.Duration
		steadyRollup   int
		markdown       bool
		asJSON         bool
		cpuProfile     string
		storePID       int
		shardBatch     int
		eventBatch     int
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure every counter model against Cassandra's native counters and a plain insert",
		Long: `Measure the counter models against the baseline they replace, Cassandra's
native counters, and against the ceiling of any durable write, a plain insert:
on the same session, at the same consistency, in the same run.

Scenarios (--scenarios):
  increments  for each --counters setting (1 = one hot counter; N = spread
              over N counters, see --hot-fraction), the same load on each
              --models model, in this order:
                sharded  Client.Apply on the sharded model
                native   on Cassandra first the raw CQL baseline (UPDATE
                         <keyspace>.native_bench SET c = c + ? WHERE k = ?),
                         then Client.Apply on the library's native model
                events   a new event per call
                actor    each caller an actor setting its running count
                ledger   a credit of 1 with a new request id per call
                cas      read + compare-and-set
                plain    the plain-insert ceiling, no counter at all: on
                         Cassandra INSERT INTO <keyspace>.plain_bench (k, id, v)
                         VALUES (?, ?, ?), a new row per call; embedded, a
                         Pebble Set per call with the store's fsync setting
              With --read-ratio R, a fraction R of the calls read instead
              (Client.Get, Client.LedgerValue, a CQL SELECT) the counters
              the writes go to; reads are reported in their own columns.
  http        sharded increments through an HTTP server started in this
              process on 127.0.0.1, driven by the Go client
  reads       for each --read-shards value N: reads of a counter with N live
              shards, and of one whose N shards GC folded into its tally
              (0 shards + tally); then reads of a native counter
  event-reads for each --event-reads value N: reads of an events counter
              holding N un-rolled events, then after one rollup folded them
  aging       (only when named) --aging-days simulated days of a hot and a
              cold sharded counter: every day --aging-writers new processes
              (new mutators) write them, the day passes on a simulated
              clock, GC folds what is final, and a long-lived reader reads
              each counter for --aging-read-time; a native read on the
              first and last day is the baseline on Cassandra. Each
              writer also credits a ledger as an actor of its own, and
              the reader credits another as one actor. Shows whether
              reads slow down as folded shards and retired ledger actors
              pile up (aging.png in --report)
  steady      (only when named) a steady load, not a max-throughput test:
              for each --steady-rates rate, one events counter (a namespace
              with the default events options) is driven open loop at that
              many increments/s for --duration (after --warmup): every 10 ms
              a ticker hands the increments due (rate/100) to a pool of
              writers sized to the rate (--concurrency plays no part), each
              a Client.Apply with a new request id; what no
              writer could take is dropped and counted, and the achieved
              rate is reported. Nothing else writes. Every
              --steady-read-every three readers each read once: a full read
              of the events counter (Client.Get), a bounded-staleness read
              (Client.GetWithin, --steady-staleness) and a read of a native
              counter written once at the start (the baseline). Reported per
              run and per 10 s window: read p50/p99 per reader, the ratios
              events-full/native and events-stale/native, the events each
              full read adds after the rollup, the rollup lag the full reads
              see (read time - rollup epoch: p50, p99, max), the achieved
              rate, errors, the events engine's rollups, seals and events
              rolled, and CPU (with --store-pid, the store's CPU seconds and
              CPU per 1,000 increments; writes and rollups share the store
              and are not told apart). With --steady-counters N another run
              drives N counters at 1/s each (N/s round robin), each read
              picking a random one. In --report: steady-RATE.png and
              steady-N-counters.png (read p99 and rollup lag over time)

Each run has --concurrency callers in a closed loop: --warmup (discarded),
then --duration measured. After each increments run the counters are read
back and compared with the acknowledged writes (reads are never counted).
The table shows throughput, latency percentiles, errors, updates per shard
write (group commit), the mean shard write latency, the cores used by this
process, by the store (with --store-pid) and by the whole machine, and this
process's resident memory (peak while the row ran, and at its end). Nothing
runs as a separate server: the load generator, the library, the HTTP server
and the embedded store are all this one process, which shares the machine
with the store, so read the CPU columns before the ratios.

Ratios follow the table: every model against the native baseline, with the
bars docs/benchmarks.md sets (sharded >= 10x native on one hot counter, >= 2x over
100 counters, events >= 1x, reads after GC or rollup <= 2x a native read),
and every model as a share of the plain-insert ceiling. Without --cassandra
the raw CQL baseline cannot run; the library's native model on the embedded
store (an atomic add) is the baseline and no bar applies.

A closed loop of --concurrency callers measures each model at that load,
which is not what it can sustain: one model saturates at 64 callers,
another fills its group commits only at 512. With --sweep the increments
rows are measured at each listed concurrency in turn, until throughput
rises less than --sweep-gain or the write p99 passes --sweep-p99; the
level with the most throughput within the limit is marked sustainable, and
the ratios and charts compare sustainable levels.

While it runs a line per row goes to standard error, redrawn with a progress
bar when standard error is a terminal. --report DIR also writes DIR/report.md
(conditions, command line, table, ratios), DIR/report.json,
DIR/throughput.png (ops/s per model and counters setting) and
DIR/latency-cdf.png (write latency distribution per model on the hot counter).

On Cassandra the keyspace (--keyspace) and the native_bench and plain_bench
tables are created when missing; every run uses new counter names, so runs
can share a keyspace. The global flags (--server, --ns, ...) play no part:
nothing talks to a running server.`,
		Example: `  abacus bench --duration 5s --report bench-report
  abacus bench --cassandra 127.0.0.1 --duration 20s --markdown
  abacus bench --cassandra 127.0.0.1,127.0.0.2,127.0.0.3 --replication-factor 3 --consistency QUORUM \
      --keyspace abacus_bench_rf3 --scenarios increments --counters 1,100 --report rf3
  abacus bench --counters 100 --hot-fraction 0.5 --read-ratio 0.2 --models sharded,native,plain
  abacus bench --cassandra 127.0.0.1 --scenarios reads --read-shards 1,10,100 --json
  abacus bench --scenarios aging --aging-days 30 --aging-writers 100 --report aging
  abacus bench --scenarios steady --steady-rates 1000,10000 --duration 10m --report steady
  abacus bench --cassandra 127.0.0.1 --store-pid $(pgrep -f CassandraDaemon) --scenarios steady \
      --steady-rates 1000,10000 --steady-counters 10000 --duration 10m --report steady
  abacus bench --cassandra 127.0.0.1 --scenarios increments --models sharded,native,events \
      --counters 1,100 --sweep 16,64,256,1024 --duration 5s --report sweep`,
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
			if steadyRollup < 0 {
				return usagef("--steady-rollup-cost must not be negative (0 skips the phase)")
			}
			if shardBatch < 1 || shardBatch > driver.MaxShardWrites {
				return usagef("--shard-batch %d: want 1 (each write on its own) to %d", shardBatch, driver.MaxShardWrites)
			}
			if eventBatch < 1 || eventBatch > driver.MaxShardWrites {
				return usagef("--event-batch %d: want 1 (each write on its own) to %d", eventBatch, driver.MaxShardWrites)
			}
			if !(hotFraction >= 0 && hotFraction <= 1) {
				return usagef("--hot-fraction %v: want a fraction from 0 (uniform) to 1 (every call on the first counter)", hotFraction)
			}
			if !(readRatio >= 0 && readRatio < 1) {
				return usagef("--read-ratio %v: want a fraction from 0 (writes only) up to but not including 1", readRatio)
			}
			if reportDir != "" {
				if fi, err := os.Stat(reportDir); err == nil && !fi.IsDir() {
					return usagef("--report %s: not a directory", reportDir)
				}
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
				HotFraction:       hotFraction,
				ReadRatio:         readRatio,
				Scenarios:         scenarios,
				ReadShards:        readShards,
				Models:            models,
				EventReads:        eventReads,
				Sweep:             sweep,
				SweepP99:          sweepP99,
				SweepGain:         sweepGain,
				AgingDays:         agingDays,
				AgingWriters:      agingWriters,
				AgingReadTime:     agingReadTime,
				SteadyRates:       steadyRates,
				SteadyCounters:    steadyCounters,
				SteadyReadEvery:   steadyEvery,
				SteadyStaleness:   steadyStale,
				SteadyRollupCost:  steadyRollup,
				StorePID:          storePID,
				ShardBatch:        shardBatch,
				EventBatch:        eventBatch,
				Progress:          cmd.ErrOrStderr(),
				// A dumb terminal cannot erase a line to redraw it.
				ProgressBar: isTerminal(cmd.ErrOrStderr()) && os.Getenv("TERM") != "dumb",
				Command:     commandLine(cmd),
			}
			if steadyRollup == 0 {
				cfg.SteadyRollupCost = -1 // bench.Config reads 0 as "default"
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
			if reportDir != "" {
				// Written even after an early stop: the rows measured so far
				// are worth keeping.
				if err := rep.WriteDir(reportDir); err != nil {
					werr = errors.Join(werr, err)
				} else {
					fmt.Fprintf(cmd.ErrOrStderr(), "report written to %s\n", reportDir)
				}
			}
			if runErr != nil {
				return errors.Join(fmt.Errorf("benchmark stopped early: %w", runErr), werr)
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
	fl.IntSliceVar(&counters, "counters", []int{1, 100}, "increments settings: spread updates over this many counters (1 = one hot counter)")
	fl.Float64Var(&hotFraction, "hot-fraction", 0, "share of the increments calls going to the first counter of each setting, the rest uniform over the others (default 0: uniform over all)")
	fl.Float64Var(&readRatio, "read-ratio", 0, "share of the increments calls that read the model's counters instead of writing, below 1 (default 0: writes only)")
	fl.StringSliceVar(&scenarios, "scenarios", bench.DefaultScenarios, "scenarios to run: "+strings.Join(bench.Scenarios, ", "))
	fl.IntSliceVar(&readShards, "read-shards", []int{1, 100, 1000}, "shards of the counters in the read scenarios (live, and folded by GC)")
	fl.StringSliceVar(&models, "models", bench.Models, "models of the increments scenario: "+strings.Join(bench.Models, ", ")+" (native includes the raw CQL baseline on Cassandra; plain is the plain-insert ceiling)")
	fl.IntSliceVar(&eventReads, "event-reads", []int{10, 1000, 100000}, "un-rolled events of the counters in the event-reads scenario")
	fl.IntSliceVar(&sweep, "sweep", nil, "increments: measure each row at each of these ascending concurrencies, stop when throughput rises less than --sweep-gain or p99 passes --sweep-p99, and compare models at their sustainable level (default: every row at --concurrency)")
	fl.DurationVar(&sweepP99, "sweep-p99", 100*time.Millisecond, "the write p99 a sustainable sweep level must stay within")
	fl.Float64Var(&sweepGain, "sweep-gain", 0.05, "the least relative rise in throughput that makes a sweep try the next level")
	fl.IntVar(&agingDays, "aging-days", 30, "simulated days of the aging scenario")
	fl.IntVar(&agingWriters, "aging-writers", 100, "writer processes started on every simulated day of the aging scenario")
	fl.DurationVar(&agingReadTime, "aging-read-time", time.Second, "measured reads of each aging row (after a fifth of it as warm-up)")
	fl.IntSliceVar(&steadyRates, "steady-rates", bench.DefaultSteadyRates, "steady scenario: increments/s of its one-counter runs, each for --duration (0 alone: none, for --steady-counters only)")
	fl.IntVar(&steadyCounters, "steady-counters", 0, "steady scenario: also drive this many events counters at 1 increment/s each (default 0: none)")
	fl.DurationVar(&steadyEvery, "steady-read-every", bench.DefaultSteadyReadEvery, "steady scenario: how often each reader (full, bounded-staleness, native) reads")
	fl.DurationVar(&steadyStale, "steady-staleness", bench.DefaultSteadyStaleness, "steady scenario: the bound of the bounded-staleness reads (Client.GetWithin)")
	fl.IntVar(&steadyRollup, "steady-rollup-cost", bench.DefaultSteadyRollupCost, "steady scenario: after each one-counter run, write this many increments at its rate to a new counter with no background rollups, then roll them up with GC, measuring the store CPU of each phase apart (Rollup cost table; 0: skip)")
	fl.BoolVar(&markdown, "markdown", false, "print the results as a Markdown table")
	fl.BoolVar(&asJSON, "json", false, "print the results as JSON (durations in nanoseconds)")
	fl.StringVar(&reportDir, "report", "", "also write report.md, report.json, throughput.png and latency-cdf.png into this directory (created when missing); aging.png and steady-*.png for those scenarios")
	fl.IntVar(&shardBatch, "shard-batch", 32, "shard writes of any counters one request to the store may carry (the library's MaxShardBatch; 1 sends each on its own)")
	fl.IntVar(&eventBatch, "event-batch", 32, "event writes of any counters one request to the store may carry (the library's MaxEventBatch; 1 sends each on its own)")
	fl.IntVar(&storePID, "store-pid", 0, "process id of a Cassandra node on this machine: record its CPU use per scenario (Linux), for throughput per store core")
	fl.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole benchmark to this file (for go tool pprof)")
	return cmd
}

// commandLine rebuilds the command that is running from the flags that
// were set (on the command line or through ABACUS_* variables), in a form
// that can be pasted into a shell to run the same benchmark again.
func commandLine(cmd *cobra.Command) string {
	parts := []string{cmd.CommandPath()}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		v := f.Value.String()
		if strings.HasSuffix(f.Value.Type(), "Slice") {
			v = strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
		}
		if f.Value.Type() == "bool" && v == "true" {
			parts = append(parts, "--"+f.Name)
			return
		}
		parts = append(parts, "--"+f.Name, shellQuote(v))
	})
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe
// characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:/=@+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
