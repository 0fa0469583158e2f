package embedded

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/abacusdb/abacus/driver"
	"github.com/cockroachdb/pebble/v2"
)

// WriteShard implements driver.Shards. It is a blind merge of one cell: the
// merge operator, not this call, decides later whether it wins.
func (d *Driver) WriteShard(ctx context.Context, p *driver.WriteShardParams) error {
	// A cell's payload runs to its end, so the header can be written first
	// and the shard row appended in place: one allocation.
	value := make([]byte, 0, cellHeaderLen+shardPayloadMin+len(p.Shard.State))
	value = appendShardPayload(appendCell(value, cell{Timestamp: p.Timestamp}), p.Shard)
	return d.merge(ctx, "write shard", shardKey(p.Namespace, p.Counter, p.Shard.ID), value, func() string {
		return fmt.Sprintf("%s/%s/%s", p.Namespace, p.Counter, p.Shard.ID)
	})
}

// WriteShards implements driver.Shards: one Pebble batch, so the writes
// land together (more than the contract asks) at the cost of one commit.
func (d *Driver) WriteShards(ctx context.Context, ws []driver.WriteShardParams) error {
	if err := driver.CheckShardWrites(ws); err != nil {
		return fmt.Errorf("embedded: write shards: %w", err)
	}
	var first string
	if len(ws) > 0 {
		first = fmt.Sprintf(", the first %s/%s/%s", ws[0].Namespace, ws[0].Counter, ws[0].Shard.ID)
	}
	return d.writeBatch(ctx, "write shards", func(b *pebble.Batch) error {
		var value []byte
		for _, p := range ws {
			value = appendShardPayload(appendCell(value[:0], cell{Timestamp: p.Timestamp}), p.Shard)
			// Merge copies the value into the batch: the buffer is reused.
			if err := b.Merge(shardKey(p.Namespace, p.Counter, p.Shard.ID), value, nil); err != nil {
				return err
			}
		}
		return nil
	}, " (%d%s)", len(ws), first)
}

// ReadShards implements driver.Shards.
func (d *Driver) ReadShards(ctx context.Context, p *driver.ReadShardsParams) (*driver.ShardSet, error) {
	return readLocked(ctx, d, "read shards", func() (*driver.ShardSet, error) {
		return d.readShards(p.Namespace, p.Counter, p.From, readStatsFrom(ctx))
	}, " of %s/%s", p.Namespace, p.Counter)
}

// readShards reads a counter's shards and tally. With from set it seeks
// past the shards below it instead of stepping over them: keys order IDs by
// length, then bytes, so the skipped run is the IDs as long as from and
// below it. Shorter and longer IDs are all read, which the contract allows.
// The shorter ones are read first, then the read jumps to from: it never
// starts at the counter's first key, which may lie below thousands of
// deleted ones (purged tombstones, until a compaction drops them) that an
// iterator steps over one by one to find a live key.
func (d *Driver) readShards(ns, counter, from string, st *ReadStats) (_ *driver.ShardSet, err error) {
	// Shards and tally are read through one iterator, hence one consistent
	// view (SetBounds keeps it). Reading them separately could see a
	// fold's new tally together with the shards it deleted, and count
	// those shards twice.
	prefix := counterPrefix(ns, counter)
	it, err := d.iterPrefix(prefix)
	if err != nil {
		return nil, err
	}
	defer closeIter(it, &err, "")
	set := &driver.ShardSet{Shards: []driver.Shard{}}
	tombstones := 0
	defer func() { // before the close
		if err != nil {
			return
		}
		live := len(set.Shards)
		if set.Tally != nil {
			live++
		}
		st.add(live, tombstones, pointsOf(it))
	}()

	spans := [][2][]byte{{prefix, prefixEnd(prefix)}}
	if from != "" && len(from) < 0x80 { // a one-byte length: lengths order as bytes
		shorter := append(slices.Clone(prefix), byte(len(from)))
		spans = [][2][]byte{{prefix, shorter}, {shardKey(ns, counter, from), prefixEnd(prefix)}}
	}
	for _, span := range spans {
		it.SetBounds(span[0], span[1])
		for valid := it.First(); valid; valid = it.Next() {
			id, err := shardIDAfter(it.Key(), len(prefix))
			if err != nil {
				return nil, fmt.Errorf("key %x: %w", it.Key(), err)
			}
			raw, err := it.ValueAndErr()
			if err != nil {
				return nil, fmt.Errorf("shard %q: %w", id, err)
			}
			c, err := decodeCell(raw)
			if err != nil {
				return nil, fmt.Errorf("shard %q: %w", id, err)
			}
			if c.Tombstone {
				tombstones++
				continue
			}
			expires, state, err := decodeShardPayload(c.Payload)
			if err != nil {
				return nil, fmt.Errorf("shard %q: %w", id, err)
			}
			set.Shards = append(set.Shards, driver.Shard{
				ID:        id,
				State:     slices.Clone(state), // the iterator reuses its buffer
				ExpiresAt: expires,
			})
		}
		if err := it.Error(); err != nil {
			return nil, err
		}
	}
	// Length-prefixed keys sort by ID length first, so sort by ID here.
	slices.SortFunc(set.Shards, func(a, b driver.Shard) int { return cmp.Compare(a.ID, b.ID) })

	tk := tallyKey(ns, counter)
	it.SetBounds(tk, prefixEnd(tk))
	if it.First() {
		raw, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("tally: %w", err)
		}
		c, err := decodeCell(raw)
		if err != nil {
			return nil, fmt.Errorf("tally: %w", err)
		}
		// The bounds also admit longer keys with tk as a prefix, which
		// cannot exist (tally keys have a fixed component count), but
		// check rather than trust.
		if string(it.Key()) != string(tk) {
			return nil, fmt.Errorf("unexpected key %x in tally range", it.Key())
		}
		if !c.Tombstone {
			set.Tally = &driver.Tally{State: slices.Clone(c.Payload), Timestamp: c.Timestamp}
		}
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	return set, nil
}

// shardIDAfter decodes the shard ID that ends key after the counter prefix
// of length n. It spares ReadShards decoding (and allocating) the namespace
// and counter of every shard, which the iterator bounds already fix.
func shardIDAfter(key []byte, n int) (string, error) {
	rest := key[n:]
	l, size := binary.Uvarint(rest)
	if size <= 0 || size != uvarintLen(l) || l != uint64(len(rest)-size) {
		return "", errBadKey
	}
	return string(rest[size:]), nil
}

// Fold implements driver.Shards. Its cells go into one batch, which Pebble
// commits atomically, so a crash leaves either the whole fold or none of it.
func (d *Driver) Fold(ctx context.Context, p *driver.FoldParams) error {
	if err := p.Check(); err != nil {
		return fmt.Errorf("embedded: fold: %w", err)
	}
	return d.writeBatch(ctx, "fold", func(b *pebble.Batch) error {
		ts := p.Tally.Timestamp
		tombstone := appendCell(nil, cell{Timestamp: ts, Tombstone: true})
		for _, id := range p.Delete {
			if err := b.Merge(shardKey(p.Namespace, p.Counter, id), tombstone, nil); err != nil {
				return err
			}
		}
		for _, s := range p.Write {
			row := appendShardPayload(appendCell(nil, cell{Timestamp: ts}), s)
			if err := b.Merge(shardKey(p.Namespace, p.Counter, s.ID), row, nil); err != nil {
				return err
			}
		}
		tally := appendCell(make([]byte, 0, cellHeaderLen+len(p.Tally.State)), cell{Timestamp: ts, Payload: p.Tally.State})
		return b.Merge(tallyKey(p.Namespace, p.Counter), tally, nil)
	}, " %s/%s", p.Namespace, p.Counter)
}

// ListCounters implements driver.Shards.
func (d *Driver) ListCounters(ctx context.Context, p *driver.ListCountersParams) ([]driver.CounterKey, error) {
	return readLocked(ctx, d, "list counters", func() ([]driver.CounterKey, error) {
		return d.listCounters(ctx, p.Namespace)
	}, "")
}

func (d *Driver) listCounters(ctx context.Context, ns string) (_ []driver.CounterKey, err error) {
	shardLo, tallyLo := namespacePrefix(tableShards, ns), namespacePrefix(tableTally, ns)
	it, err := d.iterPrefix(shardLo)
	if err != nil {
		return nil, err
	}
	defer closeIter(it, &err, "")

	seen := make(map[driver.CounterKey]bool)
	var out []driver.CounterKey
	add := func(k driver.CounterKey) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}

	// A counter is listed if one of its shards is live. Once one is found,
	// seek past the counter's remaining shards instead of reading them all.
	for valid := it.First(); valid; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		_, parts, err := decodeKey(it.Key())
		if err != nil {
			return nil, fmt.Errorf("key %x: %w", it.Key(), err)
		}
		live, err := liveCell(it, true)
		if err != nil {
			return nil, fmt.Errorf("shard %s/%s/%s: %w", parts[0], parts[1], parts[2], err)
		}
		if !live {
			valid = it.Next()
			continue
		}
		add(driver.CounterKey{Namespace: parts[0], Counter: parts[1]})
		valid = it.SeekGE(prefixEnd(counterPrefix(parts[0], parts[1])))
	}
	if err := it.Error(); err != nil {
		return nil, err
	}

	it.SetBounds(tallyLo, prefixEnd(tallyLo))
	for valid := it.First(); valid; valid = it.Next() {
		_, parts, err := decodeKey(it.Key())
		if err != nil {
			return nil, fmt.Errorf("key %x: %w", it.Key(), err)
		}
		live, err := liveCell(it, false)
		if err != nil {
			return nil, fmt.Errorf("tally %s/%s: %w", parts[0], parts[1], err)
		}
		if live {
			add(driver.CounterKey{Namespace: parts[0], Counter: parts[1]})
		}
	}
	if err := it.Error(); err != nil {
		return nil, err
	}

	slices.SortFunc(out, func(a, b driver.CounterKey) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Counter, b.Counter))
	})
	return out, nil
}

// liveCell reports whether the iterator's current cell holds a value rather
// than a tombstone. A shard's payload is checked too, so that a counter
// ListCounters names can also be read.
func liveCell(it *pebble.Iterator, shard bool) (bool, error) {
	raw, err := it.ValueAndErr()
	if err != nil {
		return false, err
	}
	c, err := decodeCell(raw)
	if err != nil || c.Tombstone {
		return false, err
	}
	if shard {
		if _, _, err := decodeShardPayload(c.Payload); err != nil {
			return false, err
		}
	}
	return true, nil
}
