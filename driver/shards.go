package driver

import (
	"context"
	"fmt"
)

// Shard is one mutator's persisted state for one counter.
type Shard struct {
	// ID is the mutator's unique id.
	ID string
	// State is the encoded CRDT state (package crdt).
	State []byte
	// ExpiresAt is the mutator's death time in microseconds since the epoch;
	// every write of this shard has a timestamp below it.
	ExpiresAt int64
}

// Tally is the folded state of every shard garbage-collected so far.
type Tally struct {
	// State is the encoded CRDT state (package crdt).
	State []byte
	// Timestamp is the write timestamp of the fold that produced it: one
	// microsecond past the highest ExpiresAt folded into it.
	Timestamp int64
}

// CounterKey names a counter.
type CounterKey struct {
	Namespace string
	Counter   string
}

// WriteShardParams are the parameters of Shards.WriteShard.
type WriteShardParams struct {
	Namespace string
	Counter   string
	Shard     Shard
	// Timestamp is the write timestamp in microseconds. The caller (the
	// mutator) keeps it below Shard.ExpiresAt; drivers do not check it, but
	// folds are only safe because it holds.
	Timestamp   int64
	Consistency Consistency
}

// MaxShardWrites is the most writes one Shards.WriteShards call may carry:
// the native protocol counts a batch's statements in 16 bits.
const MaxShardWrites = 65535

// CheckShardWrites reports whether ws is a batch Shards.WriteShards takes:
// not more than MaxShardWrites writes, all at one consistency level.
func CheckShardWrites(ws []WriteShardParams) error {
	return checkBatch("shard", ws, func(p *WriteShardParams) Consistency { return p.Consistency })
}

// checkBatch reports whether ws, writes of the named kind, fit one batch:
// not more than MaxShardWrites (the native protocol's limit, which every
// batch shares), all at one consistency level.
func checkBatch[P any](kind string, ws []P, level func(*P) Consistency) error {
	if len(ws) > MaxShardWrites {
		return fmt.Errorf("%d %s writes exceed the %d of one batch", len(ws), kind, MaxShardWrites)
	}
	for i := 1; i < len(ws); i++ {
		if a, b := level(&ws[0]), level(&ws[i]); a != b {
			return fmt.Errorf("%s writes at %v and %v in one batch: a batch has one consistency level", kind, a, b)
		}
	}
	return nil
}

// ReadShardsParams are the parameters of Shards.ReadShards.
type ReadShardsParams struct {
	Namespace string
	Counter   string
	// From, when set, lets the driver leave out shards whose ID sorts below
	// it (Go string order); every live shard at or above it is returned, and
	// so is the tally. A driver may also return live shards below From.
	// Callers set it only when every shard below From is already folded into
	// the tally they expect, so that a read skips the folded shards'
	// tombstones instead of scanning them (see docs/architecture.md, "Reads
	// that skip folded shards"). A Cassandra partition with no row at or
	// above From reads as an empty set, tally included: the caller must then
	// read again without From.
	From        string
	Consistency Consistency
}

// ShardSet is everything stored for one counter of the sharded model.
type ShardSet struct {
	// Tally is nil when the counter has never been folded.
	Tally *Tally
	// Shards are the live (not yet folded) shards, sorted by ID.
	Shards []Shard
}

// FoldParams are the parameters of Shards.Fold.
type FoldParams struct {
	Namespace string
	Counter   string
	// Delete lists the IDs of the shards folded into Tally.
	Delete []string
	// Tally is the new tally; its Timestamp is also the timestamp of the
	// deletes.
	Tally Tally
	// Write lists shards written in the same batch, at the same timestamp,
	// as WriteShard would write them. The sharded engine writes its anchor
	// here: a shard that no fold deletes, so that a read bounded by From
	// always finds a row to carry the tally.
	Write       []Shard
	Consistency Consistency
}

// Check reports a fold that no driver should apply: a shard both deleted
// and written, whose outcome would depend on how the store breaks the tie.
func (p *FoldParams) Check() error {
	if len(p.Write) == 0 {
		return nil
	}
	deleted := make(map[string]bool, len(p.Delete))
	for _, id := range p.Delete {
		deleted[id] = true
	}
	for _, s := range p.Write {
		if deleted[s.ID] {
			return fmt.Errorf("fold of %s/%s both deletes and writes shard %q", p.Namespace, p.Counter, s.ID)
		}
	}
	return nil
}

// ListCountersParams are the parameters of Shards.ListCounters.
type ListCountersParams struct {
	// Namespace restricts the listing to one namespace when not empty.
	Namespace string
}

// ShardTombstonePurger is implemented by stores that keep the delete of a
// folded shard as a cell until told to drop it: the embedded store.
// Cassandra drops its own tombstones after the table's gc_grace_seconds, so
// its driver has no such method.
type ShardTombstonePurger interface {
	// PurgeShardTombstones removes the deletes of folded shards written at
	// timestamps (microseconds) below before, and reports how many it
	// removed. A shard write that arrives after its tombstone is purged,
	// with a timestamp below it, is no longer hidden: the caller chooses
	// before so that none can arrive (docs/architecture.md, "Purging the
	// tombstones of folded shards").
	PurgeShardTombstones(ctx context.Context, before int64) (int, error)
}

// Shards stores the sharded model (“Order-free, sharded counters on Cassandra”): one row per mutator plus a tally.
type Shards interface {
	// WriteShard replaces the shard's row with p.Shard at p.Timestamp. A row
	// already written at a higher timestamp, or deleted at an equal or higher
	// timestamp, is left as it is. Replaying the same write is harmless.
	WriteShard(ctx context.Context, p *WriteShardParams) error

	// WriteShards makes each write of ws as WriteShard would, of any
	// counters, in one request to the store (the sharded engine combines
	// the shard writes of many counters this way, so that many quiet
	// counters share a round trip as one hot counter's updates do). Every
	// write must have the same Consistency. On success every write is
	// made; on an error any of them may or may not have been, as if each
	// had failed on its own: the batch is not atomic across counters (so a
	// failed batch of several writes is never ErrUnavailable, which says
	// nothing was applied). It may hold at most MaxShardWrites writes.
	WriteShards(ctx context.Context, ws []WriteShardParams) error

	// ReadShards returns the counter's tally and live shards from one
	// consistent read: reading them separately while a fold lands could count
	// the folded shards twice or not at all. A counter that was never written
	// returns an empty set, not ErrNotFound.
	ReadShards(ctx context.Context, p *ReadShardsParams) (*ShardSet, error)

	// Fold atomically (within the counter's partition) deletes the listed
	// shards, writes p.Write and writes the tally, all at p.Tally.Timestamp. The usual
	// timestamp rules apply to every cell: a fold never overwrites a tally
	// written at a higher timestamp, and a shard write that arrives later
	// with a lower timestamp than the delete stays deleted. Replaying a fold
	// any number of times gives the same result.
	Fold(ctx context.Context, p *FoldParams) error

	// ListCounters returns the key of every counter that has shards or a
	// tally. It scans the whole store; it is for GC sweeps, not hot paths.
	ListCounters(ctx context.Context, p *ListCountersParams) ([]CounterKey, error)
}
