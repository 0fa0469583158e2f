package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/abacusdb/abacus/driver"
	"github.com/cockroachdb/pebble/v2"
)

var _ driver.EventSeals = (*Driver)(nil)

// SealEvents implements driver.EventSeals with a check-then-set under the
// seal key's lock (lockCounter): Pebble has no insert-if-absent, but the
// directory lock admits one process, so the lock makes the check and the
// write one atomic step, as it does for CompareAndSetCAS.
//
// The write under the lock is not synced, so that seals of different
// counters share fsyncs; syncWAL makes it durable once the lock is
// released. A caller that finds a seal already there syncs too before
// returning it: the seal may be another caller's whose sync is still
// under way, and what a caller learns from a seal (whether its event
// counted) must not be undone by a crash that loses it. Losing a race is
// rare, so that sync costs little.
func (d *Driver) SealEvents(ctx context.Context, p *driver.SealEventsParams) (*driver.EventSeal, bool, error) {
	const op = "seal events"
	if err := d.acquire(ctx, op); err != nil {
		return nil, false, err
	}
	defer d.mu.RUnlock()
	key := eventSealKey(p.Namespace, p.Counter, p.Bucket, p.Seal.Start)
	stored, applied, err := func() (*driver.EventSeal, bool, error) {
		defer lockCounter(key)()
		cur, err := d.getEventSeal(key, p.Seal.Start)
		if err != nil || cur != nil {
			return cur, false, err
		}
		// A copy, so that the seal returned does not alias the caller's.
		seal := p.Seal
		seal.Events = bytes.Clone(seal.Events)
		return &seal, true, d.db.Set(key, encodeEventSeal(seal), pebble.NoSync)
	}()
	if err != nil {
		return nil, false, fmt.Errorf("embedded: %s %s/%s/%d@%d: %w", op, p.Namespace, p.Counter, p.Bucket, p.Seal.Start, err)
	}
	if err := d.syncWAL(); err != nil {
		// The seal is stored and visible; whether it survives a crash is
		// what the failed sync leaves open.
		return nil, false, fmt.Errorf("embedded: %s %s/%s/%d@%d: %w: %w", op, p.Namespace, p.Counter, p.Bucket, p.Seal.Start, driver.ErrUnknownOutcome, err)
	}
	return stored, applied, nil
}

// getEventSeal returns the seal stored under key, the key of start, or
// nil when there is none.
func (d *Driver) getEventSeal(key []byte, start int64) (*driver.EventSeal, error) {
	raw, closer, err := d.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	s, err := decodeEventSeal(start, raw)
	if err != nil {
		return nil, err
	}
	// raw belongs to Pebble only until closer is closed.
	s.Events = bytes.Clone(s.Events)
	return &s, nil
}

// ReadEventSeal implements driver.EventSeals with one reverse seek: seal
// keys sort by start within the bucket's prefix, so the last key below
// the key Before would have is the seal wanted.
func (d *Driver) ReadEventSeal(ctx context.Context, p *driver.ReadEventSealParams) (*driver.EventSeal, error) {
	return readLocked(ctx, d, "read event seal", func() (*driver.EventSeal, error) {
		return d.readEventSeal(p)
	}, " %s/%s/%d before %d", p.Namespace, p.Counter, p.Bucket, p.Before)
}

func (d *Driver) readEventSeal(p *driver.ReadEventSealParams) (_ *driver.EventSeal, err error) {
	prefix := eventSealBucketPrefix(p.Namespace, p.Counter, p.Bucket)
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: eventSealBound(prefix, p.Before)})
	if err != nil {
		return nil, err
	}
	defer closeIter(it, &err, "")
	if !it.Last() {
		if err := it.Error(); err != nil {
			return nil, err
		}
		return nil, driver.ErrNotFound
	}
	start, err := sealStartAfter(it.Key(), len(prefix))
	if err != nil {
		return nil, fmt.Errorf("key %x: %w", it.Key(), err)
	}
	raw, err := it.ValueAndErr()
	if err != nil {
		return nil, err
	}
	s, err := decodeEventSeal(start, raw)
	if err != nil {
		return nil, fmt.Errorf("seal at %d: %w", start, err)
	}
	// raw belongs to the iterator, which is closed on return.
	s.Events = bytes.Clone(s.Events)
	return &s, nil
}

// DeleteEventSeals implements driver.EventSeals with one range delete per
// bucket, in one batch. Seals are plain values that nothing merges into,
// and the caller deletes only buckets no seal is written to any more, so
// dropping the keys is the whole delete: no tombstone has to outlive them.
func (d *Driver) DeleteEventSeals(ctx context.Context, p *driver.DeleteEventSealsParams) error {
	return d.writeBatch(ctx, "delete event seals", func(b *pebble.Batch) error {
		for _, bucket := range p.Buckets {
			prefix := eventSealBucketPrefix(p.Namespace, p.Counter, bucket)
			if err := b.DeleteRange(prefix, prefixEnd(prefix), nil); err != nil {
				return err
			}
		}
		return nil
	}, " %s/%s", p.Namespace, p.Counter)
}
