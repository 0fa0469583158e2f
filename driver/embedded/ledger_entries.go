package embedded

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/abacusdb/abacus/driver"
	"github.com/cockroachdb/pebble/v2"
)

// Ledger history entries.
//
//	0x12 | namespace | ledger | at | actor | negative | seq    one entry
//
// namespace and ledger are length-prefixed components, so one ledger's
// entries are one key range. After them the key is built to sort in the
// history's order reversed, so a reverse scan reads newest first: at and
// seq as big-endian uint64, negative as one byte, and actor escaped (0x00
// becomes 0x00 0xff) and ended by 0x00 0x00, which keeps byte order where a
// length prefix would not. The key is only for order: the value repeats
// every field, so nothing ever decodes a key.
//
// Pebble has no TTL. A read skips expired entries, and a write that finds
// the ledger's oldest entry long expired deletes the expired span with one
// range delete (purgeExpiredEntries).
const (
	tableLedgerEntries byte = 0x12
	entryVersion       byte = 1
)

func entriesPrefix(ns, ledger string) []byte {
	return counterKey(tableLedgerEntries, ns, ledger, 0)
}

func entryKey(ns, ledger string, e *driver.LedgerEntry) []byte {
	b := entriesPrefix(ns, ledger)
	b = binary.BigEndian.AppendUint64(b, uint64(e.At))
	for i := 0; i < len(e.Actor); i++ {
		b = append(b, e.Actor[i])
		if e.Actor[i] == 0 {
			b = append(b, 0xff)
		}
	}
	b = append(b, 0, 0)
	neg := byte(0)
	if e.Negative {
		neg = 1
	}
	b = append(b, neg)
	return binary.BigEndian.AppendUint64(b, e.Seq)
}

// encodeEntry is an entry's stored value: version, at, actor, negative,
// seq, request id, amount, expiry (microseconds).
func encodeEntry(e *driver.LedgerEntry, expiresAt int64) []byte {
	b := make([]byte, 0, 40+len(e.Actor)+len(e.RequestID))
	b = append(b, entryVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(e.At))
	b = appendString(b, e.Actor)
	if e.Negative {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.BigEndian.AppendUint64(b, e.Seq)
	b = appendString(b, e.RequestID)
	b = binary.BigEndian.AppendUint64(b, uint64(e.Amount))
	return binary.BigEndian.AppendUint64(b, uint64(expiresAt))
}

func decodeEntry(b []byte) (e driver.LedgerEntry, expiresAt int64, err error) {
	r := newReader(b)
	if v := r.Byte("version"); r.Err == nil && v != entryVersion {
		return e, 0, fmt.Errorf("%w: ledger entry format version %d, this build reads only version %d", errCorrupt, v, entryVersion)
	}
	e.At = int64(r.Uint64("at"))
	e.Actor = r.String("actor")
	neg := r.Byte("negative")
	e.Seq = r.Uint64("seq")
	e.RequestID = r.String("request id")
	e.Amount = int64(r.Uint64("amount"))
	expiresAt = int64(r.Uint64("expiry"))
	switch {
	case r.Err != nil:
		return e, 0, r.Err
	case len(r.B) != 0:
		return e, 0, fmt.Errorf("%w: %d bytes after a ledger entry", errCorrupt, len(r.B))
	case neg > 1:
		return e, 0, fmt.Errorf("%w: ledger entry side byte %d", errCorrupt, neg)
	case e.At < 0 || e.Seq == 0 || e.Seq > math.MaxInt64 || e.Amount <= 0:
		return e, 0, fmt.Errorf("%w: ledger entry at %d, number %d, amount %d", errCorrupt, e.At, e.Seq, e.Amount)
	case !utf8.ValidString(e.RequestID) || !utf8.ValidString(e.Actor):
		return e, 0, fmt.Errorf("%w: ledger entry text is not UTF-8", errCorrupt)
	}
	e.Negative = neg == 1
	return e, expiresAt, nil
}

// entryPurge remembers, per ledger, when its expired entries were last
// deleted, so a write looks for them at most once a minute per ledger.
// Bounded: when full it is emptied, which costs one extra look per ledger.
type entryPurge struct {
	mu   sync.Mutex
	last map[string]int64 // entries prefix -> microseconds
}

const (
	entryPurgeEvery   = int64(time.Minute / time.Microsecond)
	entryPurgeLedgers = 100_000
)

// due reports whether the ledger's expired entries should be looked for
// at now, and records the look.
func (p *entryPurge) due(prefix []byte, now int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil || len(p.last) >= entryPurgeLedgers {
		p.last = map[string]int64{}
	}
	if last, ok := p.last[string(prefix)]; ok && now-last < entryPurgeEvery {
		return false
	}
	p.last[string(prefix)] = now
	return true
}

// writeLedgerRowWithEntries stores the entries and the row in one batch,
// and, at most once a minute per ledger, deletes the ledger's expired
// entries: everything older than the oldest entry still live, found by
// scanning from the oldest until one has not expired.
func (d *Driver) writeLedgerRowWithEntries(ctx context.Context, p *driver.WriteLedgerRowParams) error {
	return d.writeBatch(ctx, "write ledger row", func(b *pebble.Batch) error {
		return d.addLedgerRow(b, p)
	}, " %s/%s/%s", p.Namespace, p.Ledger, p.Row.Actor)
}

// addLedgerRow adds the row's write, with its entries and, when one is
// due, a purge of the ledger's expired entries, to b.
func (d *Driver) addLedgerRow(b *pebble.Batch, p *driver.WriteLedgerRowParams) error {
	for i := range p.Entries {
		e := &p.Entries[i]
		if err := b.Set(entryKey(p.Namespace, p.Ledger, e), encodeEntry(e, p.Timestamp+p.EntryTTL.Microseconds()), nil); err != nil {
			return err
		}
	}
	value := appendCell(make([]byte, 0, cellHeaderLen+len(p.Row.State)), cell{Timestamp: p.Timestamp, Payload: p.Row.State})
	if err := b.Merge(ledgerRowKey(p.Namespace, p.Ledger, p.Row.Actor), value, nil); err != nil {
		return err
	}
	if len(p.Entries) == 0 {
		return nil
	}
	// The writer's clock, as for claims: tests move it.
	now := p.Timestamp
	prefix := entriesPrefix(p.Namespace, p.Ledger)
	if !d.entryPurge.due(prefix, now) {
		return nil
	}
	end, err := d.expiredEntriesEnd(prefix, now)
	if err != nil || end == nil {
		return err
	}
	return b.DeleteRange(prefix, end, nil)
}

// entryPurgeMaxScan bounds the entries one purge looks at, so a long
// expired tail is deleted over several writes rather than in one.
var entryPurgeMaxScan = 4096

// expiredEntriesEnd returns where the ledger's expired entries end (the
// exclusive end of a range delete from the ledger's first entry) when at
// least one has expired, and nil when none has. It stops at the first
// entry that is live, or that does not decode: that one is left for reads
// to report, not deleted.
func (d *Driver) expiredEntriesEnd(prefix []byte, now int64) ([]byte, error) {
	it, err := d.iterPrefix(prefix)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var last []byte // a copy: the iterator reuses its key buffer
	for valid, n := it.First(), 0; valid && n < entryPurgeMaxScan; valid, n = it.Next(), n+1 {
		raw, err := it.ValueAndErr()
		if err != nil {
			return nil, err
		}
		if _, expiresAt, err := decodeEntry(raw); err != nil || expiresAt > now {
			if last == nil {
				return nil, nil
			}
			return slices.Clone(it.Key()), it.Error()
		}
		last = append(last[:0], it.Key()...)
	}
	if err := it.Error(); err != nil || last == nil {
		return nil, err
	}
	// Everything scanned had expired: delete up to just past the last one.
	return append(last, 0), nil
}

// ReadLedgerEntries implements driver.Ledgers with a reverse scan from the
// page's start.
func (d *Driver) ReadLedgerEntries(ctx context.Context, p *driver.ReadLedgerEntriesParams) ([]driver.LedgerEntry, error) {
	if p.Limit < 1 {
		return nil, fmt.Errorf("embedded: read ledger entries: limit %d is below 1", p.Limit)
	}
	if err := checkConsistency(p.Consistency); err != nil {
		return nil, fmt.Errorf("embedded: read ledger entries: %w", err)
	}
	return readLocked(ctx, d, "read ledger entries", func() (out []driver.LedgerEntry, err error) {
		prefix := entriesPrefix(p.Namespace, p.Ledger)
		upper := prefixEnd(prefix)
		if p.After != nil {
			upper = entryKey(p.Namespace, p.Ledger, p.After)
		}
		it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: upper})
		if err != nil {
			return nil, err
		}
		defer closeIter(it, &err, "")
		out = []driver.LedgerEntry{}
		for valid := it.Last(); valid && len(out) < p.Limit; valid = it.Prev() {
			raw, err := it.ValueAndErr()
			if err != nil {
				return nil, err
			}
			e, expiresAt, err := decodeEntry(raw)
			if err != nil {
				return nil, fmt.Errorf("entry %x: %w", it.Key(), err)
			}
			if e.At < p.Since {
				break // every entry from here on is older
			}
			if expiresAt > p.Now {
				out = append(out, e)
			}
		}
		return out, it.Error()
	}, " %s/%s", p.Namespace, p.Ledger)
}
