// Package sharded implements the sharded order-free counter model
// (docs/architecture.md, "The sharded model"): every process writes its own
// shard of a counter, reads merge all shards, and garbage collection folds
// dead shards into a tally.
//
// # Mutators
//
// A mutator is one process's writer for one counter. It is born with a death
// time (expires_at = birth + lifetime) and an id that begins with it
// (ShardID), so that ids sort by expiry. It applies
// updates to an in-memory CRDT state and persists the whole state into its
// own shard row, with a write timestamp from a monotonic microsecond clock
// that stays below expires_at. Because the row is replaced whole by its only
// writer, persisting is idempotent and needs no read.
//
// A mutator refuses updates once expires_at is within the refusal margin and
// is replaced by a newly born one; callers never see this.
//
// # Group commit
//
// Updates that arrive while a shard write is in flight are collected and
// persisted together by the next write. An update is acknowledged only after
// a write whose snapshot contains it has succeeded. If that write fails or
// times out the caller gets ErrUnknownOutcome: the update stays in the
// mutator's state and any later successful write of the mutator persists it,
// so the outcome really is unknown, never "not applied".
//
// # Retries
//
// An update may carry a request id. The engine remembers recent ids for a
// bounded window; a retry that reaches the same process while the id is
// remembered is not applied again but waits for (or reports) the original's
// durability. A retry that reaches another process is applied again: the
// model is at-least-once across processes.
//
// # Garbage collection
//
// A shard is final once its expires_at is more than the GC grace in the past:
// its mutator can no longer write and any delayed replica write has arrived.
// Collect reads the shards at consistency ALL, merges a run of final ones in
// expiry order into the previous tally (see PlanFold), and folds them with
// one single-partition batch at timestamp max(expires_at)+1µs, which also
// writes the anchor. Replays and racing collectors converge because final
// shards form a prefix in expires_at order, so a fold that covers more shards
// always carries a higher timestamp.
//
// # Reads that skip folded shards
//
// Every shard expiring before a tally's timestamp is in that tally, and ids
// sort by expiry, so once a process has read a counter's tally its reads ask
// the store only for ids at or above the bound that timestamp gives
// (driver.ReadShardsParams.From) and never step over the folded shards'
// tombstones. A read is trusted only if it returns a tally at least that
// new; otherwise the whole partition is read. docs/architecture.md, "Reads
// that skip folded shards", has the argument.
package sharded
