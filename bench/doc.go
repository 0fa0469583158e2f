// Package bench measures Abacus against the baseline it replaces: Cassandra's
// native counters (DESIGN.md §7).
//
// It has two layers. Run is a plain closed-loop load generator: N
// goroutines call an operation back to back for a warm-up (discarded) and a
// measured window, and it reports throughput and latency percentiles from
// per-worker log-linear histograms (Histogram, about 1% precision, merged
// once at the end so recording costs no synchronisation). It produces no
// numbers of its own: every figure comes from calls that really ran.
//
// RunSuite builds the scenarios of `abacus bench` on top of it:
//
//   - increments: sharded increments through the library (Client.Apply) on
//     one hot counter or spread uniformly over N, and the same load as
//     native Cassandra counter updates (UPDATE ... SET c = c + ?) on the
//     same gocql session and at the same consistency;
//   - http: sharded increments through an in-process HTTP server on
//     127.0.0.1, driven by the Go client package;
//   - reads: a sharded counter with 1, 100 and 1,000 live shards, the same
//     after Client.GC folded its shards into the tally, and a native counter.
//
// After every increments run the counters are read back and compared with
// the number of acknowledged calls, so a fast but wrong run shows up as a
// MISMATCH rather than as a good number. Shards for the read scenarios are
// written directly with driver.Shards.WriteShard (SeedShards), which is
// exactly what n mutators would have persisted.
//
// The load generator runs in the same process as the library (and, for the
// HTTP scenario, as the server), so on a small machine it competes with the
// store for CPU. Each row therefore records the cores used by this process
// and by the whole machine during the run; read them before the ratios.
package bench
