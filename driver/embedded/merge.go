package embedded

import (
	"bytes"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// Why a merge operator rather than read-modify-write under locks:
//
// Cassandra resolves conflicting writes when it reads or compacts, never when
// it writes, which is what makes shard writes blind. Pebble's merge operator
// gives the embedded store the same shape: every write (shard write, fold
// tombstone, tally) is a Merge of one encoded cell, and Pebble calls
// lwwMerger whenever it meets several cells for one key, at read time or
// during compaction, keeping the winner. Writes therefore cost no read and
// take no lock, and a fold's batch stays a single atomic commit with no
// read-your-own-writes window in which another writer could slip in.
//
// Picking the winner is a total order on cells (see cellWins), so merging
// is a max: commutative, associative and idempotent. That is exactly what
// Pebble needs, since it may merge any contiguous run of operands, in either
// direction, without the base value (includesBase false) during compaction.

// mergerName is persisted by Pebble in the OPTIONS file, and Pebble refuses
// to open a store whose merger name differs. Changing the resolution rule
// therefore requires a new name (and a migration), which is the point.
const mergerName = "abacus.lww.v1"

var lwwMergeOperator = &pebble.Merger{
	Name: mergerName,
	Merge: func(key, value []byte) (pebble.ValueMerger, error) {
		m := &lwwMerger{}
		if err := m.add(value); err != nil {
			return nil, err
		}
		return m, nil
	},
}

// cellWins reports whether cell a (encoded as ab) beats cell b (encoded as
// bb), by Cassandra's rules: the higher timestamp wins; on a tie a tombstone
// beats a value; between two values the greater bytes win. Two tombstones at
// one timestamp encode identically, so either may be kept.
func cellWins(a cell, ab []byte, b cell, bb []byte) bool {
	if a.Timestamp != b.Timestamp {
		return a.Timestamp > b.Timestamp
	}
	if a.Tombstone != b.Tombstone {
		return a.Tombstone
	}
	return bytes.Compare(ab, bb) > 0
}

// lwwMerger keeps the winning cell among the operands it has seen. Operands
// are borrowed from Pebble, so the winner is copied into buf.
type lwwMerger struct {
	buf  []byte
	best cell
	set  bool
}

func (m *lwwMerger) add(value []byte) error {
	c, err := decodeCell(value)
	if err != nil {
		// Failing the merge surfaces the damage to the reader (and makes
		// Pebble retry a compaction rather than drop data it cannot
		// interpret); guessing a winner could resurrect a deleted shard.
		return fmt.Errorf("embedded: merging cells: %w", err)
	}
	if m.set && !cellWins(c, value, m.best, m.buf) {
		return nil
	}
	m.buf = append(m.buf[:0], value...)
	m.best, _ = decodeCell(m.buf) // cannot fail: same bytes as value
	m.set = true
	return nil
}

// Because the rule is a max, the order in which operands arrive is
// irrelevant and both directions share one implementation.

func (m *lwwMerger) MergeNewer(value []byte) error { return m.add(value) }

func (m *lwwMerger) MergeOlder(value []byte) error { return m.add(value) }

func (m *lwwMerger) Finish(includesBase bool) ([]byte, io.Closer, error) {
	return m.buf, nil, nil
}
