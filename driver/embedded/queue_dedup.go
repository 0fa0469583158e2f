package embedded

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/cockroachdb/pebble/v2"
)

// Producer de-duplication. A put with a dedup id writes a record under the
// id and the message in one batch, under dedupMu, after checking that no
// live record exists: a duplicate is answered from the record and writes
// nothing. The batch makes "record without message" impossible here, so
// unlike on Cassandra a repeat never needs to complete a first put. Each
// put also deletes a few expired records (purgeDedup).
//
//	0x08 | queue | dedup id    record: the message's key, a hash of its
//	                           body, and when the record expires

const (
	tableQueueDedup byte = 0x08
	dedupVersion    byte = 1
)

func init() { componentsPerTable[tableQueueDedup] = 2 } // queue, dedup id

// dedupMu makes the check-then-write of PutDedupMessage atomic within the
// process; the directory lock keeps other processes out.
var dedupMu sync.Mutex

func dedupKey(queue, id string) []byte {
	return appendComponent(appendComponent([]byte{tableQueueDedup}, queue), id)
}

// dedupRecord is the stored record of one dedup id.
type dedupRecord struct {
	Key       driver.MessageKey
	BodyHash  [sha256.Size]byte
	ExpiresAt time.Time // millisecond precision
}

func encodeDedup(r *dedupRecord) []byte {
	b := []byte{dedupVersion}
	b = binary.AppendUvarint(b, uint64(r.Key.Shard))
	b = binary.BigEndian.AppendUint64(b, uint64(r.Key.Due.UnixMilli()))
	b = append(b, r.Key.ID[:]...)
	b = append(b, r.BodyHash[:]...)
	return binary.BigEndian.AppendUint64(b, uint64(r.ExpiresAt.UnixMilli()))
}

func decodeDedup(b []byte) (*dedupRecord, error) {
	r := newReader(b)
	if v := r.Byte("version"); r.Err == nil && v != dedupVersion {
		return nil, fmt.Errorf("%w: dedup record format version %d, this build reads only version %d", errCorrupt, v, dedupVersion)
	}
	shard := r.Uvarint("shard")
	due := int64(r.Uint64("due"))
	if r.Err != nil {
		return nil, r.Err
	}
	if shard > 1<<31-1 {
		return nil, fmt.Errorf("%w: shard %d", errCorrupt, shard)
	}
	const rest = 16 + sha256.Size + 8
	if len(r.B) != rest {
		return nil, fmt.Errorf("%w: dedup record has %d bytes after its due time, want %d", errCorrupt, len(r.B), rest)
	}
	rec := &dedupRecord{Key: driver.MessageKey{Shard: int(shard), Due: time.UnixMilli(due).UTC()}}
	copy(rec.Key.ID[:], r.B[:16])
	if !rec.Key.ID.Valid() {
		return nil, fmt.Errorf("%w: dedup record names %s, not a time-based id", errCorrupt, rec.Key.ID)
	}
	copy(rec.BodyHash[:], r.B[16:16+sha256.Size])
	rec.ExpiresAt = time.UnixMilli(int64(binary.BigEndian.Uint64(r.B[16+sha256.Size:]))).UTC()
	return rec, nil
}

// PutDedupMessage implements driver.Queues.
func (d *Driver) PutDedupMessage(ctx context.Context, p *driver.PutDedupParams) (*driver.PutDedupResult, error) {
	const op = "put message with dedup id"
	m := normalize(p.Message)
	switch {
	case p.DedupID == "" || len(p.DedupID) > driver.MaxDedupIDLen:
		return nil, fmt.Errorf("embedded: %s: the id must be 1 to %d bytes", op, driver.MaxDedupIDLen)
	case p.Window < time.Millisecond:
		return nil, fmt.Errorf("embedded: %s: window %v is below a millisecond", op, p.Window)
	case m.EnqueuedAt.IsZero():
		return nil, fmt.Errorf("embedded: %s: message %s has no EnqueuedAt", op, m.ID)
	}
	if err := d.acquire(ctx, op); err != nil {
		return nil, err
	}
	defer d.mu.RUnlock()
	dedupMu.Lock()
	defer dedupMu.Unlock()
	now := time.Now()
	hash := m.ContentHash()
	key := dedupKey(p.Queue, p.DedupID)
	raw, closer, err := d.db.Get(key)
	switch {
	case err == nil:
		rec, derr := decodeDedup(raw)
		_ = closer.Close()
		if derr != nil {
			return nil, fmt.Errorf("embedded: %s %q: %w", op, p.DedupID, derr)
		}
		if now.Before(rec.ExpiresAt) {
			return &driver.PutDedupResult{Key: rec.Key, Duplicate: true, SameBody: bytes.Equal(rec.BodyHash[:], hash[:])}, nil
		}
	case !errors.Is(err, pebble.ErrNotFound):
		return nil, fmt.Errorf("embedded: %s %q: %w", op, p.DedupID, err)
	}
	rec := dedupRecord{Key: m.MessageKey, BodyHash: hash, ExpiresAt: now.Add(p.Window).Truncate(time.Millisecond)}
	b := d.db.NewBatch()
	defer b.Close()
	if err := b.Set(messageKey(p.Queue, m.MessageKey), encodeMessage(&m), nil); err != nil {
		return nil, err
	}
	if err := b.Set(key, encodeDedup(&rec), nil); err != nil {
		return nil, err
	}
	if err := d.purgeDedup(b, p.Queue, now); err != nil {
		return nil, fmt.Errorf("embedded: %s: %w", op, err)
	}
	if err := b.Commit(d.writeOpts); err != nil {
		return nil, fmt.Errorf("embedded: %s in %q: %w", op, p.Queue, err)
	}
	return &driver.PutDedupResult{Key: m.MessageKey}, nil
}

// dedupCursor is, per queue, the key after which the next purge step
// looks, guarded by dedupMu.
var dedupCursor = map[string][]byte{}

// dedupPurgeStep is how many records each put with a dedup id examines
// for expiry. Each put adds one record and examines this many, walking the
// queue's records round and round, so the store holds about a window's
// worth of records (plus a fraction while the walk catches up), and no put
// pays for a scan of them all.
const dedupPurgeStep = 4

// purgeDedup adds to b the deletion of expired records among the next
// dedupPurgeStep of the queue's.
func (d *Driver) purgeDedup(b *pebble.Batch, queue string, now time.Time) (err error) {
	prefix := appendComponent([]byte{tableQueueDedup}, queue)
	lower := prefix
	if c := dedupCursor[queue]; c != nil {
		lower = append(append([]byte(nil), c...), 0) // just after it
	}
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	defer closeIter(it, &err, "purge dedup records")
	n := 0
	valid := it.First()
	for ; valid && n < dedupPurgeStep; valid = it.Next() {
		n++
		dedupCursor[queue] = append(dedupCursor[queue][:0], it.Key()...)
		rec, err := decodeDedup(it.Value())
		if err != nil {
			continue // a corrupt record is reported when its id is put, not here
		}
		if !now.Before(rec.ExpiresAt) {
			if err := b.Delete(it.Key(), nil); err != nil {
				return err
			}
		}
	}
	if !valid {
		delete(dedupCursor, queue) // the end: start over next time
	}
	return nil
}
