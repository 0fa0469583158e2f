package sharded

import (
	"fmt"
	"math"
	"sync"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/crdt"
	"github.com/abacusdb/abacus/internal/randomid"
)

// Shard ids begin with the mutator's expires_at, so that ids sort by
// expiry and the shards a fold has folded are the ones whose ids sort below
// a bound derived from the tally's timestamp (docs/architecture.md, "Reads
// that skip folded shards"). The leading '-' sorts below every hex digit:
// ids of releases before this layout (32 random hex digits) sort above
// every bound and are therefore always read.
const shardIDPrefix = '-'

// ShardID returns a new mutator's id: '-', its expires_at as 16 hex digits
// (fixed width, so string order is numeric order for positive values), '-'
// and 16 random hex digits that keep two mutators born in the same
// microsecond apart.
func ShardID(expiresAt int64) string {
	return fmt.Sprintf("%c%016x-%s", shardIDPrefix, expiresAt, randomid.Hex(8))
}

// boundFor returns the lowest id a shard expiring at or after ts can have:
// every shard with a lower id expires before ts. It is as long as a shard
// id, which matters to the embedded store: its keys order ids by length
// first, so only ids of the bound's length below it can be skipped.
func boundFor(ts int64) string {
	return fmt.Sprintf("%c%016x-%016x", shardIDPrefix, ts, 0)
}

// anchorID names the anchor, a shard that every fold writes and none
// deletes. Its state is the counter's empty state, so merging it changes
// nothing, and it never expires, so it is never final. It exists because
// Cassandra returns a partition's static columns (the tally) only alongside
// a row: a read bounded below the anchor always has one. '~' sorts above
// every other id.
const anchorID = "~anchor"

// anchorFor returns the anchor shard of a counter of kind k.
func anchorFor(k crdt.Kind) (driver.Shard, error) {
	st, err := crdt.New(k)
	if err != nil {
		return driver.Shard{}, err
	}
	raw, err := st.MarshalBinary()
	if err != nil {
		return driver.Shard{}, err
	}
	return driver.Shard{ID: anchorID, State: raw, ExpiresAt: math.MaxInt64}, nil
}

// withoutAnchor removes the anchor from set.Shards (sorted by id, so it is
// last if present).
func withoutAnchor(set *driver.ShardSet) {
	if n := len(set.Shards); n > 0 && set.Shards[n-1].ID == anchorID {
		set.Shards = set.Shards[:n-1]
	}
}

// dropFolded removes from set the shards of this layout (ShardID) that
// expire before its tally's timestamp and returns their ids. The tally holds
// every such shard (docs/architecture.md, invariant I), so a live row of one
// is a delete that has not reached this replica yet (read repair of a
// bounded read can bring it the tally without the deletes below the bound)
// or a row that came back after its tombstone was dropped unrepaired;
// counting it would count it twice. Shards with ids of earlier releases are
// kept whatever they expire: a tally written by an earlier release may have
// skipped one that overflowed it and folded later ones.
func dropFolded(set *driver.ShardSet) []string {
	var dropped []string
	kept := set.Shards[:0]
	for _, s := range set.Shards {
		if s.ExpiresAt < set.Tally.Timestamp && hasExpiryLayout(s.ID) {
			dropped = append(dropped, s.ID)
			continue
		}
		kept = append(kept, s)
	}
	set.Shards = kept
	return dropped
}

// hasExpiryLayout reports whether id has ShardID's layout, which only
// releases that keep invariant I write.
func hasExpiryLayout(id string) bool {
	return len(id) == shardIDLen && id[0] == shardIDPrefix && id[17] == '-'
}

// shardIDLen is the length of every ShardID and boundFor.
const shardIDLen = 1 + 16 + 1 + 16

// bounds remembers, per counter, the tally timestamp this process last
// read. Every shard expiring before it is in that tally and in every later
// one, so a read may start at boundFor(it).
type bounds struct {
	mu        sync.RWMutex // every read looks its counter up
	byCounter map[driver.CounterKey]bound
	max       int
}

// bound is a tally timestamp and the id bound it gives, formatted once.
type bound struct {
	ts   int64
	from string
	// stale is set when a read found live rows the tally already holds,
	// until a collection that read the whole partition deletes them.
	stale bool
}

func (b *bounds) init(max int) {
	b.byCounter = make(map[driver.CounterKey]bound)
	b.max = max
}

// get returns k's tally timestamp and bound; ts is 0 when none is known.
func (b *bounds) get(k driver.CounterKey) bound {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.byCounter[k]
}

// learn records that a read of k found a tally at ts. A whole-partition
// read (full) replaces what is known, a bounded one only raises it. When
// the map is full, a counter not known yet gets in only if evict is set,
// in place of an arbitrary one; forgetting a bound costs one
// whole-partition read.
func (b *bounds) learn(k driver.CounterKey, ts int64, full, evict bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	old, ok := b.byCounter[k]
	switch {
	case ok && old.ts == ts, ok && !full && old.ts > ts:
		return
	case !ok && len(b.byCounter) >= b.max:
		if !evict {
			return
		}
		for victim := range b.byCounter {
			delete(b.byCounter, victim)
			break
		}
	}
	b.byCounter[k] = bound{ts: ts, from: boundFor(ts), stale: old.stale}
}

// markStale sets or clears k's stale mark, if k is known.
func (b *bounds) markStale(k driver.CounterKey, stale bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if old, ok := b.byCounter[k]; ok {
		old.stale = stale
		b.byCounter[k] = old
	}
}

// forget drops what is known of k.
func (b *bounds) forget(k driver.CounterKey) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.byCounter, k)
}
