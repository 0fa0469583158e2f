package embedded

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/abacusdb/abacus/driver"
	"github.com/cockroachdb/pebble/v2"
)

var _ driver.Events = (*Driver)(nil)

// The events model's writes are blind merges of LWW cells, like shard
// writes: the timestamps the caller gives (event time, bucket start,
// epoch) decide between writes exactly as Cassandra's USING TIMESTAMP
// does, so a replay from any process lands on the same cell. Keys and
// values are described in events_encoding.go.

// MarkEventBucket implements driver.Events with a merge of a live marker
// cell at the bucket start.
func (d *Driver) MarkEventBucket(ctx context.Context, p *driver.MarkEventBucketParams) error {
	value := encodeEventValue(kindMarker, eventValue{Timestamp: p.Bucket})
	return d.merge(ctx, "mark event bucket", markerKey(p.Namespace, p.Counter, p.Bucket), value, func() string {
		return fmt.Sprintf("%s/%s/%d", p.Namespace, p.Counter, p.Bucket)
	})
}

// WriteEvent implements driver.Events with a merge of the event's cell at
// the event time. Of two writes of one (time, id) with different deltas
// the merge operator keeps the greater cell bytes, whatever their order.
func (d *Driver) WriteEvent(ctx context.Context, p *driver.WriteEventParams) error {
	e := p.Event
	value := encodeEventValue(kindEvent, eventValue{Timestamp: e.Time, Value: e.Delta})
	return d.merge(ctx, "write event", eventKey(p.Namespace, p.Counter, p.Bucket, e.Time, e.ID), value, func() string {
		return fmt.Sprintf("%s/%s/%d/%s", p.Namespace, p.Counter, e.Time, e.ID)
	})
}

// WriteEvents implements driver.Events with one Pebble batch of the merges
// WriteEvent makes.
func (d *Driver) WriteEvents(ctx context.Context, ws []driver.WriteEventParams) error {
	if err := driver.CheckEventWrites(ws); err != nil {
		return fmt.Errorf("embedded: write events: %w", err)
	}
	var first string
	if len(ws) > 0 {
		first = fmt.Sprintf(", the first %s/%s/%d/%s", ws[0].Namespace, ws[0].Counter, ws[0].Event.Time, ws[0].Event.ID)
	}
	return d.writeBatch(ctx, "write events", func(b *pebble.Batch) error {
		for _, p := range ws {
			e := p.Event
			value := encodeEventValue(kindEvent, eventValue{Timestamp: e.Time, Value: e.Delta})
			if err := b.Merge(eventKey(p.Namespace, p.Counter, p.Bucket, e.Time, e.ID), value, nil); err != nil {
				return err
			}
		}
		return nil
	}, " (%d%s)", len(ws), first)
}

// WriteRollup implements driver.Events with a merge of the rollup cell at
// the epoch.
func (d *Driver) WriteRollup(ctx context.Context, p *driver.WriteRollupParams) error {
	value := encodeEventValue(kindRollup, eventValue{Timestamp: p.Rollup.Epoch, Value: p.Rollup.Value})
	return d.merge(ctx, "write rollup", rollupKey(p.Namespace, p.Counter), value, func() string {
		return fmt.Sprintf("%s/%s@%d", p.Namespace, p.Counter, p.Rollup.Epoch)
	})
}

// ReadEventCounter implements driver.Events. The rollup and the markers
// are read through one iterator, hence from one snapshot: a rollup and
// the bucket deletes that follow it are never seen half-applied in the
// wrong direction (new markers list with an old rollup).
func (d *Driver) ReadEventCounter(ctx context.Context, p *driver.ReadEventCounterParams) (*driver.EventCounter, error) {
	return readLocked(ctx, d, "read event counter", func() (*driver.EventCounter, error) {
		return d.readEventCounter(p.Namespace, p.Counter, readStatsFrom(ctx))
	}, " %s/%s", p.Namespace, p.Counter)
}

func (d *Driver) readEventCounter(ns, counter string, st *ReadStats) (*driver.EventCounter, error) {
	ec := &driver.EventCounter{Buckets: []int64{}}
	var (
		points     uint64
		tombstones int
	)
	err := d.scanPrefix(eventRecordPrefix(ns, counter), &points, func(key, raw []byte) error {
		k, err := decodeEventKey(key)
		if err != nil {
			return fmt.Errorf("key %x: %w", key, err)
		}
		v, err := decodeEventValue(k, raw)
		if err != nil {
			return fmt.Errorf("key %x: %w", key, err)
		}
		switch {
		case v.Deleted:
			tombstones++
		case k.Kind == kindRollup:
			ec.Rollup = &driver.Rollup{Value: v.Value, Epoch: v.Timestamp}
		case k.Kind == kindMarker:
			// Marker keys sort by bucket, so the list comes out ascending.
			ec.Buckets = append(ec.Buckets, k.Bucket)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	live := len(ec.Buckets)
	if ec.Rollup != nil {
		live++
	}
	st.add(live, tombstones, points)
	return ec, nil
}

// ReadEvents implements driver.Events. The bucket's deletion cell, if
// any, is the first key under the bucket's prefix; events at or before its
// timestamp are hidden, as Cassandra's partition tombstone hides them.
// The rest is one ordered range scan, already newest first.
func (d *Driver) ReadEvents(ctx context.Context, p *driver.ReadEventsParams) ([]driver.Event, error) {
	return readLocked(ctx, d, "read events", func() ([]driver.Event, error) {
		return d.readEvents(ctx, p)
	}, " %s/%s/%d", p.Namespace, p.Counter, p.Bucket)
}

func (d *Driver) readEvents(ctx context.Context, p *driver.ReadEventsParams) (_ []driver.Event, err error) {
	events := []driver.Event{}
	if p.After >= p.UpTo {
		return events, nil
	}
	prefix := eventBucketPrefix(p.Namespace, p.Counter, p.Bucket)
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: eventTimeBound(prefix, p.After)})
	if err != nil {
		return nil, err
	}
	defer closeIter(it, &err, "")
	deletion := 0  // the bucket's deletion cell, a tombstone
	defer func() { // before the close
		if err == nil {
			readStatsFrom(ctx).add(len(events), deletion, pointsOf(it))
		}
	}()
	after := p.After
	if it.First() && len(it.Key()) == len(prefix) {
		deletion = 1
		raw, err := it.ValueAndErr()
		if err != nil {
			return nil, err
		}
		v, err := decodeEventValue(eventKeyParts{Kind: kindBucketDeletion}, raw)
		if err != nil {
			return nil, fmt.Errorf("bucket deletion: %w", err)
		}
		after = max(after, v.Timestamp)
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	if after >= p.UpTo {
		return events, nil
	}
	// Narrowing the upper bound skips the deleted events that Pebble has
	// not compacted away yet, rather than reading and dropping them.
	it.SetBounds(eventTimeBound(prefix, p.UpTo), eventTimeBound(prefix, after))
	for valid := it.First(); valid; valid = it.Next() {
		if len(events)%4096 == 4095 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		k, err := eventKeyAfter(it.Key(), len(prefix))
		if err != nil {
			return nil, fmt.Errorf("key %x: %w", it.Key(), err)
		}
		raw, err := it.ValueAndErr()
		if err != nil {
			return nil, err
		}
		v, err := decodeEventValue(k, raw)
		if err != nil {
			return nil, fmt.Errorf("event %d/%q: %w", k.Time, k.ID, err)
		}
		events = append(events, driver.Event{ID: k.ID, Time: k.Time, Delta: v.Value})
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	return events, nil
}

// eventKeyAfter decodes the time and id that end an event key after the
// bucket prefix of length n, sparing ReadEvents the namespace and counter
// of every event, which the iterator bounds already fix.
func eventKeyAfter(key []byte, n int) (eventKeyParts, error) {
	rest := key[n:]
	if len(rest) < int64Len {
		return eventKeyParts{}, fmt.Errorf("%w: event key with a %d-byte time", errBadKey, len(rest))
	}
	return eventKeyParts{Kind: kindEvent, Time: descendingFrom(rest), ID: string(rest[int64Len:])}, nil
}

// DeleteEventBuckets implements driver.Events in one batch, committed
// atomically. Per bucket it merges:
//
//   - a deletion cell at p.Timestamp under the bucket's prefix. Like
//     Cassandra's partition tombstone it hides every event at or before
//     the timestamp, also ones written after the delete (a per-event
//     tombstone could not cover an event never seen before);
//   - a range delete of the bucket's events at or before p.Timestamp,
//     which gives their space back. It is safe to drop these keys whole,
//     every write included, because an event key's only timestamp is the
//     time in the key: no write to one of them could have been newer;
//   - a marker tombstone at p.Timestamp, which the merge operator weighs
//     against the marker's own timestamp (the bucket start).
func (d *Driver) DeleteEventBuckets(ctx context.Context, p *driver.DeleteEventBucketsParams) error {
	tombstone := encodeEventValue(kindBucketDeletion, eventValue{Timestamp: p.Timestamp, Deleted: true})
	return d.writeBatch(ctx, "delete event buckets", func(b *pebble.Batch) error {
		for _, bucket := range p.Buckets {
			prefix := eventBucketPrefix(p.Namespace, p.Counter, bucket)
			err := b.Merge(prefix, tombstone, nil)
			if err == nil {
				err = b.DeleteRange(eventTimeBound(prefix, p.Timestamp), prefixEnd(prefix), nil)
			}
			if err == nil {
				err = b.Merge(markerKey(p.Namespace, p.Counter, bucket), tombstone, nil)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}, " %s/%s", p.Namespace, p.Counter)
}

// ListEventCounters implements driver.Events: it scans the record table
// (of one namespace when p.Namespace is set) and lists every counter with
// a rollup or a live marker.
func (d *Driver) ListEventCounters(ctx context.Context, p *driver.ListCountersParams) ([]driver.CounterKey, error) {
	return readLocked(ctx, d, "list event counters", func() ([]driver.CounterKey, error) {
		return d.listEventCounters(ctx, p.Namespace)
	}, "")
}

func (d *Driver) listEventCounters(ctx context.Context, ns string) (_ []driver.CounterKey, err error) {
	it, err := d.iterPrefix(namespacePrefix(tableEventCounters, ns))
	if err != nil {
		return nil, err
	}
	defer closeIter(it, &err, "")
	var out []driver.CounterKey
	for valid := it.First(); valid; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		k, err := decodeEventKey(it.Key())
		if err != nil {
			return nil, fmt.Errorf("key %x: %w", it.Key(), err)
		}
		raw, err := it.ValueAndErr()
		if err != nil {
			return nil, err
		}
		v, err := decodeEventValue(k, raw)
		if err != nil {
			return nil, fmt.Errorf("record %s/%s: %w", k.Namespace, k.Counter, err)
		}
		if v.Deleted {
			valid = it.Next()
			continue
		}
		// One live cell is enough; skip the counter's other records.
		out = append(out, driver.CounterKey{Namespace: k.Namespace, Counter: k.Counter})
		valid = it.SeekGE(prefixEnd(eventRecordPrefix(k.Namespace, k.Counter)))
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	// Length-prefixed keys sort by name length first.
	slices.SortFunc(out, func(a, b driver.CounterKey) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Counter, b.Counter))
	})
	return out, nil
}
