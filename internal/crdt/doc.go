// Package crdt holds the order-free state types behind sharded counters. It
// does no I/O: other packages persist the bytes it produces and hand back the
// bytes they read.
//
// # Model
//
// A counter is split into shards. Each shard belongs to exactly one writer
// (a mutator), which applies updates ([Op]) to its own [State] and persists
// the whole state. States of different shards are combined with
// [State.Merge] only when the counter is read, or when garbage collection
// folds expired shards into a tally.
//
// # Merge rule
//
// For every kind, Merge is commutative and associative, so shards can be
// combined in whatever order a reader happens to receive them and a tally
// can absorb them in batches.
//
//   - sum: a PN counter. P accumulates positive deltas and N the magnitudes
//     of negative ones; Merge adds P to P and N to N. That is NOT idempotent:
//     merging the same shard twice counts it twice. It is correct only
//     because shards are disjoint writers and each shard row is replaced
//     whole by its writer, never merged into itself.
//   - max, min: the extreme value seen, plus a flag for "nothing seen yet".
//     Merge keeps the larger (smaller) value and is idempotent.
//   - distinct: a HyperLogLog sketch (github.com/axiomhq/hyperloglog,
//     precision 14). Merge takes the register-wise maximum and is
//     idempotent; Value is the cardinality estimate.
//
// Sum refuses (with [ErrOverflow], leaving the state as it was) any update
// or merge that would overflow P or N, or push P-N outside int64. Refusing
// is preferable to wrapping because a wrapped total would be silently and
// permanently wrong once folded into a tally.
//
// # Encoding
//
// [State.MarshalBinary] and [Decode] use a small versioned format:
//
//	byte 0     format version, currently 1
//	byte 1     kind (1 sum, 2 max, 3 min, 4 distinct)
//	byte 2...  payload, whose length is fixed per kind:
//	  sum       16 bytes: P then N, each uint64 big-endian
//	  max, min   9 bytes: flag (0 empty, 1 set), then the value as int64
//	             big-endian; an empty state stores value 0
//	  distinct  the sketch's own binary form (library format version 2,
//	             precision 14), at most 16404 bytes
//
// Encoding is deterministic: a state encodes to bytes that depend only on its
// logical content, never on hidden history such as insertion order or map
// layout. Two garbage collectors folding the same shards therefore write
// byte-identical tallies. For distinct states this needs care, because the
// library's sparse representation keeps a hash-ordered buffer of recent
// insertions; the buffer is drained into the sorted sparse list (and the
// sketch turned dense if that list has outgrown the dense form) on a copy
// before encoding.
//
// Decode treats its input as untrusted: anything malformed yields an error
// wrapping [ErrCorrupt] (an unknown kind byte additionally wraps
// [ErrUnknownKind]) and never a panic. Canonical input, meaning anything
// MarshalBinary produced, decodes to a state that re-encodes to the same
// bytes.
//
// # Concurrency
//
// A State is not safe for concurrent mutation. Kind, Value, Empty, Clone and
// MarshalBinary never write to the receiver, so they may run concurrently
// with each other (for example under a read lock).
package crdt
