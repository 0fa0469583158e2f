package embedded

import (
	"context"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// ReadStats is what the driver's reads stepped over, as WithReadStats
// collects it. Reads may add to it concurrently; read its fields once the
// reads have returned. A read that fails adds nothing.
type ReadStats struct {
	mu sync.Mutex
	// Live is the rows the reads returned: a counter's shards and tally,
	// an events counter's rollup and bucket markers and its events, a
	// ledger's actor rows.
	Live int
	// Tombstones is the tombstone cells the reads stepped over: this
	// driver's deletes (a folded shard's, until it is purged; a rolled-up
	// events bucket's marker), Cassandra's tombstones here.
	Tombstones int
	// Points is every point Pebble's iterators stepped over to find them
	// (pebble.IteratorStats, InternalStats.PointCount): the live rows, and
	// whatever a read pays for besides them — this driver's tombstone
	// cells (a folded shard until it is purged), merge operands not yet
	// merged into one value, and Pebble's point deletions with the keys
	// they hide until a compaction drops both (keys under a range deletion
	// Pebble may skip without counting them). Pebble may count a point twice when an
	// iterator passes it twice (a read in two spans does).
	Points int
	// Reads is how many driver reads added to the counts.
	Reads int
}

// add records one read's rows, its tombstone cells and the points its
// iterators stepped over. A nil s (no stats asked for) records nothing.
func (s *ReadStats) add(live, tombstones int, points uint64) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Live += live
	s.Tombstones += tombstones
	s.Points += int(points)
	s.Reads++
}

// pointsOf returns how many points it has stepped over so far.
func pointsOf(it *pebble.Iterator) uint64 {
	return it.Stats().InternalStats.PointCount
}

// readStatsKey is the context key of WithReadStats.
type readStatsKey struct{}

// WithReadStats returns a context under which the driver's reads of a
// counter's shards (ReadShards), of an events counter's record and events
// (ReadEventCounter, ReadEvents) and of a ledger's rows (ReadLedger) add
// what they returned and what their iterators stepped over to s. It is the
// embedded store's counterpart of Cassandra's read tracing
// (cassandra.WithReadTrace): what a read costs the store, apart from the
// machine it runs on. For diagnosis and benchmarks.
func WithReadStats(ctx context.Context, s *ReadStats) context.Context {
	return context.WithValue(ctx, readStatsKey{}, s)
}

// readStatsFrom returns the context's ReadStats, nil when none was asked
// for.
func readStatsFrom(ctx context.Context) *ReadStats {
	s, _ := ctx.Value(readStatsKey{}).(*ReadStats)
	return s
}
