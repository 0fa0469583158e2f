// Package cassandra implements the Abacus storage seam (package driver) on
// Apache Cassandra 2.1 and later and on ScyllaDB, using plain, typed CQL
// columns that can be inspected with cqlsh.
//
// # Tables
//
// Open creates the keyspace (Config.Keyspace, replication from
// Config.Replication) and these tables when missing, then waits for schema
// agreement. Schema returns the same statements for operators who prefer to
// run them themselves.
//
//	CREATE TABLE namespaces (
//	    name text PRIMARY KEY,
//	    model text, type text,
//	    read_cl text, write_cl text,      -- level names, e.g. "QUORUM", "DEFAULT"
//	    retention_ms bigint,              -- 0 keeps counters forever
//	    options map<text, text>,
//	    created_at timestamp)
//
//	CREATE TABLE shards (
//	    ns text, counter text,            -- partition: one counter
//	    shard text,                       -- clustering: one row per mutator
//	    state blob, expires_at bigint,    -- expires_at in µs since the epoch
//	    tally blob static,                -- folded state of collected shards
//	    tally_ts bigint static,           -- the fold's timestamp
//	    PRIMARY KEY ((ns, counter), shard))
//
//	CREATE TABLE ledgers (
//	    ns text, ledger text,             -- partition: one ledger
//	    actor text,                       -- clustering: one row per actor
//	    state blob,                       -- encoded actor state (package ledger)
//	    PRIMARY KEY ((ns, ledger), actor))
//
//	CREATE TABLE ledger_claims (          -- strict-mode ledgers only
//	    ns text, ledger text, request_id text,
//	    actor text, negative boolean, seq bigint, amount bigint,
//	    PRIMARY KEY ((ns, ledger, request_id)))
//
//	CREATE TABLE ledger_entries (         -- history, kept by TTL
//	    ns text, ledger text, day int,    -- partition: one ledger's UTC day
//	    at bigint, actor text,            -- clustering, all descending:
//	    negative boolean, seq bigint,     --   newest first
//	    request_id text, amount bigint,
//	    PRIMARY KEY ((ns, ledger, day), at, actor, negative, seq))
//
//	CREATE TABLE ledger_entry_days (      -- the days that have entries
//	    ns text, ledger text, day int,
//	    PRIMARY KEY ((ns, ledger), day))  -- clustering descending, TTL
//
//	CREATE TABLE ledger_rights (          -- ledgers with a balance floor
//	    ns text, ledger text,
//	    version bigint, state blob,       -- changed only by LWT on version
//	    PRIMARY KEY ((ns, ledger)))
//
//	CREATE TABLE ledger_rights_dc (       -- a data center's share of them
//	    ns text, ledger text, dc text,
//	    version bigint, state blob,       -- LWT at LOCAL_SERIAL, by that
//	    PRIMARY KEY ((ns, ledger, dc)))   --   data center's servers only
//
// and the delay queue's (queue.go; “cassandra-ruby-queue”):
//
//	CREATE TABLE queues (name text PRIMARY KEY, shards int, shard_ms bigint,
//	    max_deliveries int, visibility_ms bigint, created_at timestamp)
//	    -- and, added by ALTER: spread int, generation bigint,
//	    -- deleted_at timestamp, priorities int
//
//	CREATE TABLE queue_messages (
//	    queue text, shard int,            -- partition: one time shard
//	    lock text static,                 -- consumer lease: LWT, with a TTL
//	    lock_since timestamp static,
//	    floor timestamp static,           -- no live message is due earlier
//	    anchor boolean static,
//	    due timestamp, id timeuuid,       -- clustering: due time, then id
//	    body blob, enqueued_at timestamp, deliveries int,
//	    visible_at timestamp, last_error text,
//	    PRIMARY KEY ((queue, shard), due, id))
//	    WITH gc_grace_seconds = <Config.QueueGCGrace>
//
//	CREATE TABLE queue_dead (queue text, id timeuuid, shard int, due timestamp,
//	    body blob, enqueued_at timestamp, deliveries int, last_error text,
//	    died_at timestamp, PRIMARY KEY (queue, id))
//
//	CREATE TABLE queue_pauses (queue text PRIMARY KEY, paused boolean,
//	    since timestamp)                  -- written USING TIMESTAMP since
//
// and the tables of the actor, native and cas counter models (counters.go;
// “Highly Available Counters Using Cassandra” and the “Counters” design notes):
//
//	CREATE TABLE actor_values (
//	    ns text, counter text,            -- partition: one counter
//	    actor text,                       -- clustering: one row per actor
//	    value bigint,                     -- the actor's absolute value
//	    PRIMARY KEY ((ns, counter), actor))
//
//	CREATE TABLE native_counters (ns text, counter text, value counter,
//	    PRIMARY KEY ((ns, counter)))
//
//	CREATE TABLE cas_counters (ns text, counter text, value bigint,
//	    PRIMARY KEY ((ns, counter)))
//
// and the events model's (events.go; “Highly Available Counters Using Cassandra”, op-based):
//
//	CREATE TABLE event_counters (
//	    ns text, counter text,            -- partition: one counter
//	    bucket bigint,                    -- clustering: one row per marked bucket
//	    rollup_value bigint static,       -- the rollup, written at its epoch
//	    rollup_epoch bigint static,
//	    marked boolean,                   -- true; written at the bucket start
//	    PRIMARY KEY ((ns, counter), bucket))
//
//	CREATE TABLE events (
//	    ns text, counter text, bucket bigint, -- partition: one time bucket
//	    time bigint, id text,             -- clustering: newest first, then id
//	    delta bigint,                     -- written at the event time
//	    PRIMARY KEY ((ns, counter, bucket), time, id))
//	    WITH CLUSTERING ORDER BY (time DESC, id ASC)
//
//	CREATE TABLE event_seals (
//	    ns text, counter text, bucket bigint, -- partition: the bucket of start
//	    start bigint,                     -- clustering: newest first
//	    end bigint, value bigint,         -- the range (start, end], value at end
//	    cleared boolean, events blob,     -- written only by INSERT ... IF NOT EXISTS
//	    PRIMARY KEY ((ns, counter, bucket), start))
//	    WITH CLUSTERING ORDER BY (start DESC)
//
// and the cuts of deletes (lifecycle.go; written and read at a quorum at
// least, one partition per namespace):
//
//	CREATE TABLE counter_cuts (
//	    ns text,                          -- partition: one namespace
//	    counter text, at bigint,          -- clustering: "" for the namespace
//	    deletes_namespace boolean,
//	    PRIMARY KEY ((ns), counter, at))
//
// A purge deletes a generation's partitions USING TIMESTAMP the highest
// timestamp (a purged name is never written again, and an actor's version
// or an event's time may be anything); native counters' deletes take the
// server's, since Cassandra refuses a timestamp on a counter delete.
//
// The CQL avoids everything some supported server lacks: no aggregates, no
// PER PARTITION LIMIT, no SASI or materialized views.
//
// # Timestamps
//
// Conflicts are resolved by Cassandra's write timestamps (microseconds):
// the higher timestamp wins, and on a tie a delete wins. WriteShard is an
// INSERT ... USING TIMESTAMP with the caller's timestamp. Fold is one
// unlogged batch on the counter's partition, USING TIMESTAMP the new
// tally's timestamp, holding a DELETE per folded shard, an INSERT per shard
// it writes (the sharded engine's anchor) and the UPDATE of the static
// tally columns; being single-partition it is applied atomically on each
// replica, and replaying it changes nothing. ReadShards reads the partition
// unpaged so that a concurrent fold cannot be seen half-applied; with From
// it reads the clustering slice shard >= From, which never touches the row
// tombstones below it, and returns the static tally only if a row matched.
// WriteLedgerRow is likewise an INSERT ... USING TIMESTAMP of the actor's
// whole row, and SetActorValue an INSERT ... USING TIMESTAMP of the
// actor's value with its version as the timestamp; ReadActorValues
// returns WRITETIME(value) as the version.
//
// Between two values written at the same timestamp Cassandra keeps the
// one whose serialized bytes compare greater as signed bytes (Java's
// ByteBuffer.compareTo). For a bigint that is not numeric order: measured
// on Cassandra 2.1.0, 127 beats 128 and 1 beats -1. The embedded driver
// reproduces this order for actor values. ScyllaDB's order has not been
// measured. Lightweight transactions are used by CreateNamespace (IF NOT
// whole row.
//
// The events model's timestamps are the caller's: an event is INSERTed
// USING TIMESTAMP its event time, so a retry rewrites the same row; the
// rollup's two static columns are one UPDATE USING TIMESTAMP its epoch, so
// an older rollup never replaces a newer one; a marker is an UPDATE of
// marked USING TIMESTAMP the bucket start. DeleteEventBuckets sends, per
// bucket, a partition delete of the events USING TIMESTAMP the rollup's
// epoch, which also covers events that arrive later with an earlier time,
// and then deletes the markers' cells at the same timestamp in
// single-partition batches (markers are written without a row marker, so
// a cell tombstone removes the row; a row delete would be a range
// tombstone). ReadEventCounter reads its partition unpaged, like
// ReadShards; ReadEvents pages, 5000 rows at a time. Deleted markers stay
// in the counter's partition as tombstones until gc_grace_seconds have
// passed and a compaction drops them, and ReadEventCounter reads past
// them: with buckets shorter than gc_grace_seconds / 1000 (some 14
// minutes under the default ten days) a rolled-up counter's partition
// holds more than the 1,000 tombstones at which Cassandra logs a warning.
//
// The events model's seals are the one part of it Paxos decides: a seal
// must be one for its Start however many rollups race to write it, since
// a retry arriving after its range was sealed learns from the seal
// whether it counted. SealEvents is INSERT ... IF NOT EXISTS into
// event_seals at the fold level, with the Paxos phase at SERIAL; when it
// does not apply, the answer carries the seal that won. ReadEventSeal is
// a plain read of the first row below its bound (the clustering order
// is descending), LIMIT 1. DeleteEventSeals sends a partition delete per
// bucket stamped by its coordinator (no USING TIMESTAMP, no client-side
// timestamp): the seals carry their ballots' timestamps, the
// coordinators' clocks when they were written, so a delete at a rollup's
// epoch, or at a lagging client's clock, could fall below them. A purge
// deletes a marked bucket's seals with its events, as the engine marks
// every bucket a seal's Start lies in. An empty list of events is stored
// as an empty blob and read back as an empty, non-nil slice.
//
// Every lightweight transaction runs its Paxos phase at SERIAL, whatever
// the level of its commit: its decision must be one across data centers
// (lwtSerial). Lightweight transactions are used by CreateNamespace (IF NOT
// EXISTS) and by the claims of strict-mode ledgers (INSERT ... IF NOT
// EXISTS USING TTL, and a conditional DELETE); the claims table is never
// written any other way, since mixing Paxos and plain writes on one row
// breaks Paxos' guarantees. The same holds for cas_counters, written only
// by CompareAndSetCAS: INSERT ... IF NOT EXISTS when the counter must not
// exist yet, UPDATE ... SET value = ? IF value = ? otherwise, with the
// Paxos phase at SERIAL. ReadCAS reads serially at SERIAL whatever the
// level, and plainly at the level otherwise. So too for
// ledger_rights, written only by SwapLedgerRights (INSERT ... IF NOT
// EXISTS from version 0, UPDATE ... IF version = ? from any other) and
// read by ReadLedgerRights at SERIAL; a
// purge deletes a ledger's record plainly, after the ledger's last use.
// ledger_rights_dc is written and read the same way at LOCAL_SERIAL: each
// of its partitions belongs to one data center, whose servers alone run
// Paxos on it, so no two data centers' rounds meet on one partition.
//
// AddNative is UPDATE native_counters SET value = value + ?. Counter
// updates are not idempotent and Cassandra adds them as Java longs, so a
// sum beyond the int64 range wraps around silently (the embedded driver
// refuses such an add instead).
//
// # Consistency
//
// An operation whose Consistency is driver.Default uses the configured
// level for its kind: Config.ReadConsistency for reads (QUORUM),
// Config.WriteConsistency for shard, ledger, event, marker and namespace
// writes (QUORUM) and Config.FoldConsistency for folds, rollups, seals and
// bucket deletes (QUORUM). The read that precedes a fold
// must see every replica; Config.GCReadConsistency (ALL) records that level,
// and GC callers pass it as the read's Consistency.
//
// # Errors
//
// Errors wrap the driver sentinels, and the gocql error that caused them:
//
//   - driver.ErrUnavailable: the request was not executed because too few
//     replicas were alive (or no connection was free); nothing was
//     applied. A read timeout that heard from too few replicas maps here
//     too.
//   - driver.ErrUnknownOutcome: a write (or fold, or namespace creation,
//     counter update, or compare-and-set) was sent but its result is
//     unknown: server write timeouts (Paxos contention included) and
//     failures, client timeouts, cancelled contexts, broken connections,
//     overload. The write may be applied now or later.
//   - driver.ErrExists, driver.ErrNotFound, driver.ErrClosed as documented
//     on the driver package.
//
// Errors that prove a write was refused before execution (invalid query,
// unauthorized) and all other read errors are returned wrapped, without a
// sentinel. Shard writes and folds are never retried by the driver: a retry
// is the caller's decision. The one exception is CreateNamespace, whose
// conditional insert is tried again when contending Paxos rounds time out;
// the retry itself tells whether the earlier attempt was applied.
//
// Rows are decoded strictly: a null where the driver always writes a
// value, an unknown consistency name or a negative retention is reported as
// an error, never guessed at.
package cassandra
