package embedded

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// purgeBatch bounds the deletes of one purge batch, so that a store with
// millions of tombstones is purged in steps that do not hold much memory.
const purgeBatch = 1000

// compactLimit is the largest shards table a purge compacts. Pebble drops
// deleted keys only when a compaction reaches them, which on a small store
// may be never, and until then a store's files and its reads carry them
// (on docs/aging.md's scenario a compaction after each purge kept the
// files flat and made reads 0.7-0.8x as long). But a manual compaction
// rewrites every whole file its span overlaps, at every level, and more
// below them: a few purged keys can cost hundreds of megabytes on a large
// store, every sweep. The span lies within the shards table, so the whole
// table's size bounds that work (give or take a file at each edge): a
// purge compacts only while the table is estimated at this size or less,
// and leaves a larger store to Pebble's own compactions, which also go
// after files dense with deletes.
const compactLimit = 64 << 20

// purgedSpan is the span of deleted tombstones a compaction is owed: how
// many, and the first and last of them. A compaction that fails gives its
// span back; one skipped because the table is large drops it.
type purgedSpan struct {
	mu          sync.Mutex
	n           int
	first, last []byte
}

// widen adds n deletes between first and last (keys in order) to the span.
func (p *purgedSpan) widen(first, last []byte, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.first == nil || bytes.Compare(first, p.first) < 0 {
		p.first = first
	}
	if p.last == nil || bytes.Compare(last, p.last) > 0 {
		p.last = last
	}
	p.n += n
}

// take returns the span to compact, if any, and forgets it; a failed
// compaction gives it back (widen).
func (p *purgedSpan) take() (first, last []byte, n int, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		return nil, nil, 0, false
	}
	first, last, n = p.first, p.last, p.n
	p.first, p.last, p.n = nil, nil, 0
	return first, last, n, true
}

// PurgeShardTombstones implements driver.ShardTombstonePurger. It scans the
// shards table and deletes (a Pebble delete, not a cell) every tombstone
// written below before, then compacts the span of the deletes if it is
// small enough (compactLimit). A span whose compaction was cut short is
// compacted by the next call.
//
// A write merged into a purged key between the scan and the delete is
// deleted with it. That is safe for the same reason the purge is: the
// caller purges only tombstones far older than any write a shard can still
// receive, and such a write would be hidden by the tombstone anyway (its
// timestamp is below the fold's, which is past the shard's expiry).
func (d *Driver) PurgeShardTombstones(ctx context.Context, before int64) (int, error) {
	const op = "purge shard tombstones"
	if err := d.acquire(ctx, op); err != nil {
		return 0, err
	}
	defer d.mu.RUnlock()
	prefix := []byte{tableShards}
	purged := 0
	for start := prefix; ; {
		keys, next, err := d.staleTombstones(start, before)
		if err != nil {
			return purged, fmt.Errorf("embedded: %s: %w", op, err)
		}
		if len(keys) > 0 {
			b := d.db.NewBatch()
			for _, k := range keys {
				if err := b.Delete(k, nil); err != nil {
					_ = b.Close()
					return purged, fmt.Errorf("embedded: %s: %w", op, err)
				}
			}
			err := b.Commit(d.writeOpts)
			_ = b.Close()
			if err != nil {
				return purged, fmt.Errorf("embedded: %s: %w", op, err)
			}
			purged += len(keys)
			d.purged.widen(keys[0], keys[len(keys)-1], len(keys))
		}
		if next == nil {
			break
		}
		if err := ctx.Err(); err != nil {
			return purged, err
		}
		start = next
	}
	if first, last, n, ok := d.purged.take(); ok {
		end := append(slices.Clone(last), 0)
		size, err := d.db.EstimateDiskUsage([]byte{tableShards}, []byte{tableShards + 1})
		if err == nil && size <= compactLimit {
			err = d.compact(ctx, first, end)
		}
		if err != nil {
			d.purged.widen(first, last, n) // the next call tries again
			return purged, fmt.Errorf("embedded: %s: compact: %w", op, err)
		}
	}
	return purged, nil
}

// staleTombstones returns up to purgeBatch keys of the shards table, from
// start on, whose cells are tombstones written below before, and the key
// to go on from (nil at the end of the table).
func (d *Driver) staleTombstones(start []byte, before int64) (keys [][]byte, next []byte, err error) {
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: start, UpperBound: prefixEnd([]byte{tableShards})})
	if err != nil {
		return nil, nil, err
	}
	defer closeIter(it, &err, "")
	for valid := it.First(); valid; valid = it.Next() {
		if len(keys) == purgeBatch {
			return keys, slices.Clone(it.Key()), nil
		}
		raw, err := it.ValueAndErr()
		if err != nil {
			return nil, nil, fmt.Errorf("key %x: %w", it.Key(), err)
		}
		// A cell that does not decode is not known to be a tombstone: it
		// stays (reads of its counter report it), and the purge goes on.
		if c, err := decodeCell(raw); err == nil && c.Tombstone && c.Timestamp < before {
			keys = append(keys, slices.Clone(it.Key()))
		}
	}
	return keys, nil, it.Error()
}
