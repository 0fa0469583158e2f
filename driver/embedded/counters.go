package embedded

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/crdt"
	"github.com/cockroachdb/pebble/v2"
)

var (
	_ driver.Actors         = (*Driver)(nil)
	_ driver.NativeCounters = (*Driver)(nil)
	_ driver.CASCounters    = (*Driver)(nil)
)

// ErrOverflow is wrapped by AddNative when the sum would leave the int64
// range; nothing is added then. Cassandra wraps around instead.
var ErrOverflow = fmt.Errorf("native counter: %w", driver.ErrOverflow)

// ---- actors ----------------------------------------------------------------

// SetActorValue implements driver.Actors. Like a shard write it is a blind
// merge of one LWW cell, at the version as its timestamp; the merge
// operator keeps the newest, and at a tie the one Cassandra would keep
// (see appendActorPayload).
func (d *Driver) SetActorValue(ctx context.Context, p *driver.SetActorValueParams) error {
	const op = "set actor value"
	if err := d.acquire(ctx, op); err != nil {
		return err
	}
	defer d.mu.RUnlock()
	if p.Version < 1 {
		return fmt.Errorf("embedded: %s: version %d is not positive", op, p.Version)
	}
	value := make([]byte, 0, cellHeaderLen+actorPayloadLen)
	value = appendCell(value, cell{Timestamp: p.Version, Payload: appendActorPayload(nil, p.Value)})
	if err := d.db.Merge(actorKey(p.Namespace, p.Counter, p.Actor), value, d.writeOpts); err != nil {
		return fmt.Errorf("embedded: %s %s/%s/%s: %w", op, p.Namespace, p.Counter, p.Actor, err)
	}
	return nil
}

// ReadActorValues implements driver.Actors.
func (d *Driver) ReadActorValues(ctx context.Context, p *driver.ReadActorValuesParams) ([]driver.ActorValue, error) {
	return readLocked(ctx, d, "read actor values", func() ([]driver.ActorValue, error) {
		return d.readActorValues(p.Namespace, p.Counter)
	}, " %s/%s", p.Namespace, p.Counter)
}

func (d *Driver) readActorValues(ns, counter string) ([]driver.ActorValue, error) {
	vals := []driver.ActorValue{}
	err := d.scanNamed(actorPrefix(ns, counter), nil, func(actor string, raw []byte) error {
		v, version, live, err := decodeActorCell(raw)
		if err != nil {
			return err
		}
		if live { // nothing deletes actor values today; a tombstone reads as deleted
			vals = append(vals, driver.ActorValue{Actor: actor, Value: v, Version: version})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Length-prefixed keys sort by actor length first.
	slices.SortFunc(vals, func(a, b driver.ActorValue) int { return cmp.Compare(a.Actor, b.Actor) })
	return vals, nil
}

// decodeActorCell decodes a stored actor cell; live is false for a
// tombstone. A version below 1 cannot have been written by SetActorValue.
func decodeActorCell(raw []byte) (value, version int64, live bool, err error) {
	c, err := decodeCell(raw)
	if err != nil {
		return 0, 0, false, err
	}
	if c.Timestamp < 1 {
		return 0, 0, false, fmt.Errorf("%w: actor cell at version %d", errCorrupt, c.Timestamp)
	}
	if c.Tombstone {
		return 0, c.Timestamp, false, nil
	}
	v, err := decodeActorPayload(c.Payload)
	if err != nil {
		return 0, 0, false, err
	}
	return v, c.Timestamp, true, nil
}

// ---- native and cas counters ------------------------------------------------------

// Native adds and compare-and-sets are read-modify-writes of one key.
// Pebble has neither, but the directory lock admits one process, so a
// mutex per counter makes the read and the write one atomic step. The
// mutexes are striped over a fixed array shared by every Driver in the
// process (keys of different tables and stores hash apart, and two that
// collide only wait for each other briefly).
//
// The write under the lock is not synced; syncWAL makes it durable after
// the lock is released, as the queue does. Holding the lock across an
// fsync would let one add per counter reach the disk at a time, while
// concurrent syncs outside it share one fsync. Pebble's WAL is ordered, so
// an acknowledged add or set is durable together with every write it
// built on. The price: a read may see an add or set whose sync is still
// under way, and which a machine crash in that moment would lose.
var counterLocks [64]sync.Mutex

var counterLockSeed = maphash.MakeSeed()

func lockCounter(key []byte) func() {
	mu := &counterLocks[maphash.Bytes(counterLockSeed, key)%uint64(len(counterLocks))]
	mu.Lock()
	return mu.Unlock
}

// getCounterValue returns the value stored under key, and whether there
// is one.
func (d *Driver) getCounterValue(key []byte) (int64, bool, error) {
	raw, closer, err := d.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer closer.Close()
	v, err := decodeCounterValue(raw)
	if err != nil {
		return 0, false, err
	}
	return v, true, nil
}

// AddNative implements driver.NativeCounters. An add that would take the
// counter past the int64 range fails with ErrOverflow and changes
// nothing: a silent wrap, as Cassandra's, would turn a large count into a
// large negative one.
func (d *Driver) AddNative(ctx context.Context, p *driver.AddNativeParams) error {
	const op = "add native"
	if err := d.acquire(ctx, op); err != nil {
		return err
	}
	defer d.mu.RUnlock()
	key := nativeKey(p.Namespace, p.Counter)
	err := func() error {
		defer lockCounter(key)()
		cur, _, err := d.getCounterValue(key)
		if err != nil {
			return err
		}
		sum, ok := crdt.AddInt64(cur, p.Delta)
		if !ok {
			return fmt.Errorf("%w: %d + %d; nothing was added", ErrOverflow, cur, p.Delta)
		}
		return d.db.Set(key, encodeCounterValue(sum), pebble.NoSync)
	}()
	if err != nil {
		return fmt.Errorf("embedded: %s %s/%s: %w", op, p.Namespace, p.Counter, err)
	}
	if err := d.syncWAL(); err != nil {
		// The add is applied and visible; whether it survives a crash is
		// what the failed sync leaves open.
		return fmt.Errorf("embedded: %s %s/%s: %w: %w", op, p.Namespace, p.Counter, driver.ErrUnknownOutcome, err)
	}
	return nil
}

// ReadNative implements driver.NativeCounters.
func (d *Driver) ReadNative(ctx context.Context, p *driver.ReadNativeParams) (int64, error) {
	return readLocked(ctx, d, "read native", func() (int64, error) {
		v, _, err := d.getCounterValue(nativeKey(p.Namespace, p.Counter))
		return v, err
	}, " %s/%s", p.Namespace, p.Counter)
}

// ReadCAS implements driver.CASCounters. Every level reads the one
// replica, which is as fresh as a serial read.
func (d *Driver) ReadCAS(ctx context.Context, p *driver.ReadCASParams) (driver.CASValue, error) {
	return readLocked(ctx, d, "read cas", func() (driver.CASValue, error) {
		v, ok, err := d.getCounterValue(casKey(p.Namespace, p.Counter))
		return driver.CASValue{Exists: ok, Value: v}, err
	}, " %s/%s", p.Namespace, p.Counter)
}

// CompareAndSetCAS implements driver.CASCounters with a check-then-set
// under the counter's lock.
func (d *Driver) CompareAndSetCAS(ctx context.Context, p *driver.CompareAndSetCASParams) (driver.CASResult, error) {
	const op = "compare and set cas"
	if err := d.acquire(ctx, op); err != nil {
		return driver.CASResult{}, err
	}
	defer d.mu.RUnlock()
	key := casKey(p.Namespace, p.Counter)
	var res driver.CASResult
	err := func() error {
		defer lockCounter(key)()
		v, ok, err := d.getCounterValue(key)
		if err != nil {
			return err
		}
		cur := driver.CASValue{Exists: ok, Value: v}
		if !casMatches(cur, p.Expect) {
			res.Current = cur
			return nil
		}
		if err := d.db.Set(key, encodeCounterValue(p.Value), pebble.NoSync); err != nil {
			return err
		}
		res = driver.CASResult{Applied: true, Current: driver.CASValue{Exists: true, Value: p.Value}}
		return nil
	}()
	if err != nil {
		return driver.CASResult{}, fmt.Errorf("embedded: %s %s/%s: %w", op, p.Namespace, p.Counter, err)
	}
	if res.Applied {
		if err := d.syncWAL(); err != nil {
			return driver.CASResult{}, fmt.Errorf("embedded: %s %s/%s: %w: %w", op, p.Namespace, p.Counter, driver.ErrUnknownOutcome, err)
		}
	}
	return res, nil
}

// casMatches reports whether the stored value cur is what expect asks
// for. Expect.Value plays no part when the counter must not exist.
func casMatches(cur, expect driver.CASValue) bool {
	if !expect.Exists {
		return !cur.Exists
	}
	return cur.Exists && cur.Value == expect.Value
}
