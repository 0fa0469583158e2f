package embedded

import (
	"encoding/binary"
	"fmt"

	"github.com/abacusdb/abacus/driver"
)

// ---- event seal keys ---------------------------------------------------------
//
//	0x22 | ns | counter | bucket | start          seal {end, value, clear, events}
//
// bucket and start are 8 bytes each with the sign bit flipped, as in
// events_encoding.go, so within a bucket's prefix seals sort by start in
// numeric order, negative starts first: the seal with the greatest start
// below a time is the last key under the bound that time makes, and
// DeleteEventSeals drops a bucket with one range delete.

// eventSealBucketPrefix is the prefix of every seal of one bucket.
func eventSealBucketPrefix(ns, counter string, bucket int64) []byte {
	return appendAscending(counterKey(tableEventSeals, ns, counter, 2*int64Len), bucket)
}

// eventSealBound is the key of the seal starting at t in the bucket of
// prefix, and hence the exclusive upper bound of the seals starting
// before t.
func eventSealBound(prefix []byte, t int64) []byte {
	return appendAscending(append(make([]byte, 0, len(prefix)+int64Len), prefix...), t)
}

func eventSealKey(ns, counter string, bucket, start int64) []byte {
	return appendAscending(eventSealBucketPrefix(ns, counter, bucket), start)
}

// sealStartAfter decodes the start that ends a seal key after the bucket
// prefix of length n; the iterator bounds already fix the rest.
func sealStartAfter(key []byte, n int) (int64, error) {
	if len(key)-n != int64Len {
		return 0, fmt.Errorf("%w: seal key with %d bytes after its bucket, want %d", errBadKey, len(key)-n, int64Len)
	}
	return ascendingFrom(key[n:]), nil
}

// ---- event seal values -------------------------------------------------------
//
// A seal is a plain value, not an LWW cell: it is written once, by
// SealEvents's check-then-set, and never merged. Layout, version 1:
//
//	version  byte (1)
//	flags    byte, bit 0 = clear; other bits must be 0
//	end      int64, big-endian two's complement
//	value    int64, big-endian two's complement
//	events   uvarint length (minimal), then that many bytes, verbatim
//
// The start is the key's. The events' length, though they end the value,
// lets the decoder refuse a value cut short or run on, not just one whose
// header is torn; and every field has one encoding, so decode followed by
// encode gives back the same bytes (the fuzz test relies on it).

const sealVersion byte = 1

const (
	sealFlagClear  byte = 1 << 0
	sealKnownFlags      = sealFlagClear
)

// encodeEventSeal encodes s without its start, which the key holds.
func encodeEventSeal(s driver.EventSeal) []byte {
	var flags byte
	if s.Clear {
		flags |= sealFlagClear
	}
	b := make([]byte, 0, 2+2*int64Len+binary.MaxVarintLen64+len(s.Events))
	b = append(b, sealVersion, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(s.End))
	b = binary.BigEndian.AppendUint64(b, uint64(s.Value))
	b = binary.AppendUvarint(b, uint64(len(s.Events)))
	return append(b, s.Events...)
}

// decodeEventSeal decodes the seal stored under the key of start. Its
// Events alias raw, and are nil when empty.
func decodeEventSeal(start int64, raw []byte) (driver.EventSeal, error) {
	r := newReader(raw)
	if v := r.Byte("version"); r.Err == nil && v != sealVersion {
		return driver.EventSeal{}, fmt.Errorf("%w: seal format version %d, this build reads only version %d", errCorrupt, v, sealVersion)
	}
	flags := r.Byte("flags")
	s := driver.EventSeal{Start: start}
	s.End = int64(r.Uint64("end"))
	s.Value = int64(r.Uint64("value"))
	n := r.Uvarint("events length")
	if r.Err != nil {
		return driver.EventSeal{}, r.Err
	}
	if flags&^sealKnownFlags != 0 {
		return driver.EventSeal{}, fmt.Errorf("%w: unknown seal flags 0x%02x", errCorrupt, flags)
	}
	if n != uint64(len(r.B)) {
		return driver.EventSeal{}, fmt.Errorf("%w: seal says %d bytes of events, %d follow", errCorrupt, n, len(r.B))
	}
	s.Clear = flags&sealFlagClear != 0
	if n > 0 {
		s.Events = r.B
	}
	return s, nil
}
