// Package embedded is the Abacus storage driver for a local Pebble store
// (github.com/cockroachdb/pebble/v2): no server to run, one process per data
// directory. It is the default store of the CLI and of the examples.
//
//	d, err := embedded.Open(ctx, embedded.Config{Dir: "./abacus-data"})
//
// # Same rules as Cassandra
//
// The sharded model's correctness argument (“Order-free, sharded counters on Cassandra”) rests on Cassandra's
// last-write-wins rules, so this driver reproduces them per row:
//
//   - the write with the higher timestamp wins, whatever order writes arrive in;
//   - on a tie a delete wins over a write;
//   - between two writes with equal timestamps the one whose encoded row is
//     greater (bytes.Compare) wins, so every replica, and every replay,
//     settles on the same value.
//
// Deletes are stored as tombstone cells carrying their timestamp, so a late
// write of a folded shard with an older timestamp stays deleted. Cassandra
// resolves per column and this driver per row; the two only differ for
// equal-timestamp writes of different rows to one shard, which a mutator
// never produces.
//
// Every write is a Pebble merge of one encoded cell and the merge operator
// keeps the winning cell, so shard writes never read. A fold is one Pebble
// batch, committed atomically. Unless Config.NoSync is set each write is
// fsynced to the write-ahead log before it returns, so an acknowledged
// update survives kill -9 and power loss. Consistency levels are accepted and
// ignored: there is one replica.
//
// # Key layout
//
// Every key is one table byte followed by length-prefixed components, each a
// uvarint byte length then the bytes:
//
//	0x01 | ns                    -> namespace record
//	0x02 | ns | counter | shard  -> shard cell  {state, expires_at}
//	0x03 | ns | counter          -> tally cell  {state}, timestamp in the cell
//	0x04 | queue                 -> queue record
//	0x05 | queue | shard | due | id -> queued message
//	0x06 | queue | shard         -> shard state {lease, floor}
//	0x07 | queue | id            -> dead letter
//
// The queue tables (0x04-0x07) are plain values written with Set and
// Delete under a per-shard lock, not LWW cells; queue_encoding.go describes
// their fixed-width components, which sort by shard, due time and id. The
// ledger tables (0x10-0x13) and the events tables (0x20-0x22) are
// described in their own sections below.
//
// Length prefixes make keys unambiguous: namespace "a" with counter "bc" and
// namespace "ab" with counter "c" cannot share a key, and the shards of one
// counter are exactly the keys under the prefix 0x02|ns|counter. The price is
// that keys do not sort by name, so listings are sorted after the scan.
//
// # Value encodings
//
// Stored bytes are treated as untrusted (disk corruption, a newer or older
// Abacus): every decoder returns an error instead of panicking, and refuses
// format versions it does not know.
//
// A cell is: version (1 byte, currently 1), flags (1 byte, bit 0 =
// tombstone), write timestamp (8 bytes, big-endian, microseconds), payload
// (empty for a tombstone). A shard's payload is expires_at (8 bytes,
// big-endian) followed by the state; a tally's payload is its state.
// A namespace record is a plain value with its own version byte; see
// encodeNamespace.
//
// # Ledgers
//
// The ledger model (package ledger) uses four more tables:
//
//	0x10 | ns | ledger | actor      -> LWW cell {encoded actor state}
//	0x11 | ns | ledger | request id -> claim {expires_at, actor, section, seq, amount}
//	0x12 | ns | ledger | at | actor | section | seq
//	                                -> history entry {every field again, request id, amount, expires_at}
//	0x13 | ns | ledger              -> rights record {version 1, record version, state}
//
// Actor rows are LWW cells written by merge, exactly like shards. Claims of
// strict-mode ledgers are plain values: ClaimRequest is a check-then-set
// under a mutex (the directory lock admits one process, so that is a
// compare-and-set), and expiry is measured on the caller's clock. Pebble
// has no TTL, so expired claims are swept in one pass once the claims
// stored since the last sweep outnumber the claims that pass left alive.
//
// History entries are written in the same batch as the actor row that
// holds them. Their keys sort in the history's order reversed (see
// ledger_entries.go), so a page is one reverse scan; reads skip expired
// entries, and a write deletes a ledger's expired span at most once a
// minute with one range delete.
//
// A rights record (balance floors) is a plain value, like a claim,
// changed only by SwapLedgerRights's compare-and-set on its version under
// a mutex; the write is synced once the mutex is released, as cas
// counters' are, and a purge of the ledger deletes it.
//
// # Actor, native and cas counters
//
// The counter models of “Highly Available Counters Using Cassandra” and the “Counters” design notes use three more tables:
//
//	0x30 | ns | counter | actor -> LWW cell {value}, timestamp = the version
//	0x31 | ns | counter         -> native counter {version 1, int64}
//	0x32 | ns | counter         -> cas counter {version 1, int64}
//
// Actor values are LWW cells written by merge, like shards, so a write
// never reads. The payload is the value's 8 big-endian bytes with the top
// bit of each byte flipped: at equal versions the merge operator keeps the
// greater payload (bytes.Compare), and the flip turns that into the order
// Cassandra uses for bigint cells, which compares the unflipped bytes as
// signed bytes (1500 beats 1000, but 127 beats 128 and 1 beats -1). Both
// drivers therefore settle every tie on the same value.
//
// Native and cas counters are plain 9-byte values changed by a
// read-modify-write under a per-counter mutex (striped; the directory lock
// admits one process, so that is atomic): AddNative adds, CompareAndSetCAS
// checks and sets. The write is made without waiting for the disk and the
// WAL is synced once the mutex is released, so concurrent callers share
// fsyncs; a read may see an add or set whose sync is still under way. An
// add that would leave the int64 range fails with ErrOverflow and changes
// nothing, where Cassandra's counters wrap around silently.
// # Events
//
// The events model (“Highly Available Counters Using Cassandra”, op-based) uses three more tables, the
// first two of LWW cells, with fixed-width numbers after the
// length-prefixed names (events_encoding.go):
//
//	0x20 | ns | counter | bucket                -> bucket deletion (tombstone)
//	0x20 | ns | counter | bucket | ^time | id   -> event cell {delta}, timestamp = time
//	0x21 | ns | counter | 0x00                  -> rollup cell {value}, timestamp = epoch
//	0x21 | ns | counter | 0x01 | bucket         -> marker cell {}, timestamp = bucket start
//	0x22 | ns | counter | bucket | start        -> seal {version 1, flags, end, value, events}
//
// bucket is big-endian with the sign bit flipped, so markers list in
// ascending order; ^time is the same with every bit inverted, so a
// bucket's events iterate newest first, and the id, the last component,
// is stored raw, so ties sort by id in byte order. Every write is a blind
// merge, and the timestamps are the caller's, so the merge operator
// settles replays and races exactly as Cassandra's USING TIMESTAMP does.
//
// DeleteEventBuckets is one batch. Per bucket it merges a tombstone at
// the delete's timestamp into the bucket deletion cell, which reads treat
// like Cassandra's partition tombstone: it hides every event at or before
// its timestamp, including events written afterwards whose ids were never
// seen before (a tombstone per existing event could not). In the same
// batch a range delete drops the hidden events' keys, which is safe
// because an event key is only ever written at the time it holds; and a
// marker tombstone at the timestamp removes the marker unless it was
// written later.
//
// Seals are plain values, not cells: SealEvents stores one per start with
// a check-then-set under a striped lock, as cas counters do, so exactly
// one of racing callers applies; their starts sort in numeric order, so
// ReadEventSeal is one reverse seek, and DeleteEventSeals and a purge
// drop them with range deletes (events_seals_encoding.go).
//
// # Cuts and purges
//
// The cuts of deletes (package lifecycle) are plain keys (lifecycle.go):
//
//	0x50 | ns | counter | at (8 bytes, big-endian) -> flags (1: deletes the namespace)
//
// with an empty counter for a namespace-wide cut. PurgeCounter is one batch
// of range deletes, one per table of the model, over the prefix table | ns
// | counter; a generation is purged only once no process writes it, so
// nothing merges into the range after it.
//
// # Known limitations
//
//   - A folded shard's tombstone stays until a GC sweep purges it
//     (PurgeShardTombstones, driver.ShardTombstonePurger), which the
//     library does once the shard expired twice its GC grace ago, where
//     Cassandra drops tombstones after gc_grace_seconds
//     (docs/architecture.md, "Purging the tombstones of folded shards").
//     Until then reads of the sharded model seek past them
//     (ReadShardsParams.From), except a process's first read of a
//     counter, which steps over them. Other tombstones (events buckets,
//     actor values) are not purged.
//   - An event that arrives after its bucket was deleted, with a time at
//     or before the delete, is stored but hidden for good; its key stays
//     until a later delete of the same bucket removes it. Cassandra would
//     purge it after gc_grace_seconds.
//   - A corrupt or unknown-version cell makes reads of that counter fail (and
//     Pebble compactions touching it retry) rather than guess a winner,
//     because guessing could resurrect a deleted shard.
//   - One process per directory, enforced with a lock file: a second process
//     gets an error wrapping driver.ErrLocked.
package embedded
