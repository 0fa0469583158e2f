// Package bench measures Abacus against the baseline it replaces: Cassandra's
// native counters (the bars in docs/benchmarks.md).
//
// It has two layers. Run is a plain closed-loop load generator: N
// goroutines call an operation back to back for a warm-up (discarded) and a
// measured window, and it reports throughput and latency percentiles from
// per-worker log-linear histograms (Histogram, about 1% precision, merged
// once at the end so recording costs no synchronisation). It produces no
// numbers of its own: every figure comes from calls that really ran.
//
// RunWorkload is the same loop with reads mixed into the writes at a given
// ratio, tallied apart so that the writes alone are checked.
//
// RunSuite builds the scenarios of `abacus bench` on top of it:
//
//   - increments: every counter model (sharded, native, events, actor,
//     ledger, cas) through the library, Cassandra's own counter in raw CQL
//     (UPDATE ... SET c = c + ?, the baseline of docs/benchmarks.md) on the same
//     gocql session and consistency, and the plain-insert ceiling (a blind
//     CQL INSERT of a new row, or a Pebble Set), on one hot counter or
//     spread over N, optionally skewed (Config.HotFraction) and with reads
//     mixed in (Config.ReadRatio);
//   - http: sharded increments through an in-process HTTP server on
//     127.0.0.1, driven by the Go client package;
//   - reads: a sharded counter with 1, 100 and 1,000 live shards, the same
//     after Client.GC folded its shards into the tally, and a native counter;
//   - event-reads: an events counter with N un-rolled events, then after a
//     rollup;
//   - aging (only when named): simulated days of counters written by
//     restarting processes and collected daily (aging.go);
//   - steady (only when named): events counters driven open loop at fixed
//     rates while readers time full, bounded-staleness and native reads and
//     the rollup lag, per run and per 10 s window (steady.go).
//
// Report renders the rows as text, Markdown or JSON, and WriteDir adds PNG
// charts (chart.go: throughput bars, latency CDFs; linechart.go and
// steady.go: latencies over simulated days and over a run's time).
//
// After every increments run the counters are read back and compared with
// the number of acknowledged calls, so a fast but wrong run shows up as a
// MISMATCH rather than as a good number. Shards for the read scenarios are
// written directly with driver.Shards.WriteShard (SeedShards), which is
// exactly what n mutators would have persisted.
//
// The load generator runs in the same process as the library (and, for the
// HTTP scenario, as the server; embedded, as the store), so on a small
// machine it competes with the store for CPU. Each row therefore records
// the cores used by this process and by the whole machine during the run,
// and this process's resident memory; read them before the ratios.
package bench
