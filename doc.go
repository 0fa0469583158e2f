// Package abacus is the Go API of Abacus: counters that stay right when
// requests are retried, processes die and database nodes go down.
//
// A Client runs on a storage driver — the embedded Pebble store
// (package driver/embedded, the default) or Apache Cassandra / ScyllaDB
// (package driver/cassandra). Counters are addressed by (namespace, name); a
// namespace fixes how its counters are stored (the model) and what they hold
// (the type). The namespace "default" (model sharded, type sum) always
// exists.
//
// # Guarantees of the sharded model
//
//   - Acknowledged: Apply returns nil only after a shard write containing the
//     update succeeded at the namespace's write consistency. A read at a
//     consistency that overlaps it (QUORUM/QUORUM, or the embedded store)
//     sees the update.
//   - ErrUnknownOutcome: the write that should persist the update failed or
//     timed out. The update may be counted (now or when this process next
//     persists the counter) or not.
//   - Retries: an update with a RequestID that is retried on the same
//     process within Config.RequestIDWindow is applied once. A retry that
//     reaches another process is applied again (at-least-once).
//   - Any other error means the update was not applied.
//
// # Guarantees of the ledger model
//
// A namespace of model ledger (NamespaceConfig.Ledger for its options)
// holds ledgers: signed totals changed by Credit, Debit and UpdateLedger,
// each carrying a request id.
//
//   - In the default mode, LedgerModeExact, a lightweight transaction
//     claims each request id first: a request is applied once whichever
//     processes its copies reach and whenever they arrive, for as long as
//     the claim lives (ClaimTTL).
//   - A namespace may opt into LedgerModeConcurrentRetriesMayDouble, which
//     skips the claim: a retry is then recognised (Applied and Replayed,
//     nothing written) only while the request is among the last HistoryLength
//     requests of the process that applied it, and two processes receiving
//     the same request at the same moment may both apply it.
//   - ErrUnknownOutcome is returned, never success, when every write
//     attempt's outcome stayed unknown; retry with the same request id.
//
// docs/ledger.md has the table and the tests behind each line.
//
// See docs/ in the repository for the design, the HTTP API and benchmarks.
package abacus
