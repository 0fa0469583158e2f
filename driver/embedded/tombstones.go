package embedded

import (
	"context"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// purgeBatch bounds the deletes of one purge batch, so that a store with
// millions of tombstones is purged in steps that do not hold much memory.
const purgeBatch = 1000

// PurgeShardTombstones implements driver.ShardTombstonePurger. It scans the
// shards table, deletes (a Pebble delete, not a cell) every tombstone
// written below before, and then compacts the span it deleted from, so that
// the bytes go from disk and later scans step over nothing.
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
	var first, last []byte
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
			if first == nil {
				first = keys[0]
			}
			last = keys[len(keys)-1]
		}
		if next == nil {
			break
		}
		if err := ctx.Err(); err != nil {
			return purged, err
		}
		start = next
	}
	if purged > 0 {
		// Pebble drops deleted keys only when a compaction reaches them;
		// left alone, a small store may keep them (and its files) for
		// good.
		if err := d.db.Compact(ctx, first, append(slices.Clone(last), 0), false); err != nil {
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
