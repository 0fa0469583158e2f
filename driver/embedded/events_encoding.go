package embedded

import (
	"encoding/binary"
	"fmt"
)

// ---- events keys -----------------------------------------------------------
//
// The events model (“Highly Available Counters Using Cassandra”, op-based) uses three tables. Namespace and
// counter are length-prefixed components as in keys.go; the numbers after
// them are fixed-width, so they need no prefix:
//
//	0x20 | ns | counter | bucket                  bucket deletion cell
//	0x20 | ns | counter | bucket | ^time | id     event cell {delta}
//	0x21 | ns | counter | 0x00                    rollup cell {value}
//	0x21 | ns | counter | 0x01 | bucket           marker cell {}
//	0x22 | ns | counter | bucket | start          seal (events_seals_encoding.go)
//
// bucket is 8 bytes: the µs value with its sign bit flipped, big-endian,
// so buckets sort in numeric order, negative ones first. ^time is the same
// encoding of the event time with every bit inverted, so a bucket's events
// sort newest first. A seal's start has the bucket's encoding, so the
// seal holding a time is one reverse seek away. id runs to the end of the
// key: it is the last component and everything before it has a known
// length, so it needs no length prefix, and raw bytes make ties on time
// sort by id in byte order, which is Go's string order and Cassandra's
// order for text.
//
// The bucket deletion cell shares the events' prefix and sorts before
// them; it plays the part of Cassandra's partition tombstone (see
// DeleteEventBuckets).

// Events tables. Like the others, their bytes are part of the on-disk
// format: never renumber them.
const (
	tableEvents        byte = 0x20
	tableEventCounters byte = 0x21
	tableEventSeals    byte = 0x22
)

// Record kinds: the byte after the counter in tableEventCounters.
const (
	recordRollup byte = 0x00
	recordMarker byte = 0x01
)

// eventKeyKind says which of the five key shapes a key has.
type eventKeyKind uint8

const (
	kindBucketDeletion eventKeyKind = iota + 1
	kindEvent
	kindRollup
	kindMarker
	kindSeal
)

const int64Len = 8

// appendAscending appends v so that byte order is numeric order.
func appendAscending(b []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(v)^(1<<63))
}

// appendDescending appends v so that byte order is reverse numeric order.
func appendDescending(b []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(b, ^(uint64(v) ^ (1 << 63)))
}

func ascendingFrom(b []byte) int64  { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }
func descendingFrom(b []byte) int64 { return int64(^binary.BigEndian.Uint64(b) ^ (1 << 63)) }

// eventBucketPrefix is the key of the bucket's deletion cell and the
// prefix of every event in the bucket.
func eventBucketPrefix(ns, counter string, bucket int64) []byte {
	return appendAscending(counterKey(tableEvents, ns, counter, 2*int64Len+16), bucket)
}

// eventTimeBound is the lowest key of the bucket's events at time t, and
// the highest bound that excludes every event after t.
func eventTimeBound(prefix []byte, t int64) []byte {
	return appendDescending(append(make([]byte, 0, len(prefix)+int64Len), prefix...), t)
}

func eventKey(ns, counter string, bucket, t int64, id string) []byte {
	return append(appendDescending(eventBucketPrefix(ns, counter, bucket), t), id...)
}

// eventRecordPrefix is the prefix of the counter's rollup and markers.
func eventRecordPrefix(ns, counter string) []byte {
	return counterKey(tableEventCounters, ns, counter, 1+int64Len)
}

func rollupKey(ns, counter string) []byte {
	return append(eventRecordPrefix(ns, counter), recordRollup)
}

func markerKey(ns, counter string, bucket int64) []byte {
	return appendAscending(append(eventRecordPrefix(ns, counter), recordMarker), bucket)
}

// eventKeyParts is a decoded key of the events tables. Fields a kind does
// not have are zero.
type eventKeyParts struct {
	Kind      eventKeyKind
	Namespace string
	Counter   string
	Bucket    int64
	Time      int64
	ID        string
	// Start is a seal's start.
	Start int64
}

// decodeEventKey splits a stored key of the events tables. Keys come from
// disk, so any byte string must yield either a result or an error.
func decodeEventKey(key []byte) (eventKeyParts, error) {
	var p eventKeyParts
	if len(key) == 0 {
		return p, fmt.Errorf("%w: empty", errBadKey)
	}
	table := key[0]
	if table != tableEvents && table != tableEventCounters && table != tableEventSeals {
		return p, fmt.Errorf("%w: 0x%02x is not an events table", errBadKey, table)
	}
	r := newReader(key[1:])
	p.Namespace = r.String("namespace")
	p.Counter = r.String("counter")
	if r.Err != nil {
		return p, fmt.Errorf("%w: %v", errBadKey, r.Err)
	}
	rest := r.B
	if table == tableEventSeals {
		if len(rest) != 2*int64Len {
			return p, fmt.Errorf("%w: seal key with %d bytes after the counter, want %d", errBadKey, len(rest), 2*int64Len)
		}
		p.Kind = kindSeal
		p.Bucket = ascendingFrom(rest)
		p.Start = ascendingFrom(rest[int64Len:])
		return p, nil
	}
	if table == tableEvents {
		if len(rest) < int64Len {
			return p, fmt.Errorf("%w: event key without a bucket", errBadKey)
		}
		p.Bucket = ascendingFrom(rest)
		rest = rest[int64Len:]
		switch {
		case len(rest) == 0:
			p.Kind = kindBucketDeletion
		case len(rest) < int64Len:
			return p, fmt.Errorf("%w: event key with a %d-byte time", errBadKey, len(rest))
		default:
			p.Kind = kindEvent
			p.Time = descendingFrom(rest)
			p.ID = string(rest[int64Len:])
		}
		return p, nil
	}
	switch {
	case len(rest) == 1 && rest[0] == recordRollup:
		p.Kind = kindRollup
	case len(rest) == 1+int64Len && rest[0] == recordMarker:
		p.Kind = kindMarker
		p.Bucket = ascendingFrom(rest[1:])
	default:
		return p, fmt.Errorf("%w: unknown event counter record % x", errBadKey, rest)
	}
	return p, nil
}

// encodeEventKey rebuilds the key decodeEventKey decoded; the fuzz test
// checks that the two agree.
func encodeEventKey(p eventKeyParts) []byte {
	switch p.Kind {
	case kindBucketDeletion:
		return eventBucketPrefix(p.Namespace, p.Counter, p.Bucket)
	case kindEvent:
		return eventKey(p.Namespace, p.Counter, p.Bucket, p.Time, p.ID)
	case kindRollup:
		return rollupKey(p.Namespace, p.Counter)
	case kindMarker:
		return markerKey(p.Namespace, p.Counter, p.Bucket)
	case kindSeal:
		return eventSealKey(p.Namespace, p.Counter, p.Bucket, p.Start)
	}
	return nil
}

// ---- events values ---------------------------------------------------------
//
// Every value is an LWW cell (encoding.go), so its format version is the
// cell's and the merge operator settles conflicting writes:
//
//	event:           live, timestamp = the event time, payload = delta
//	                 (8 bytes, big-endian two's complement)
//	rollup:          live, timestamp = the epoch, payload = value (8 bytes)
//	marker:          live, timestamp = the bucket start, empty payload; or a
//	                 tombstone at the delete's timestamp
//	bucket deletion: a tombstone at the highest delete's timestamp
//
// An event's cell timestamp must equal the time in its key: WriteEvent
// never writes anything else, and reads rely on it (see DeleteEventBuckets).

// eventValue is a decoded cell of the events tables.
type eventValue struct {
	Timestamp int64
	// Deleted is set for tombstones: a deleted marker, a bucket deletion.
	Deleted bool
	// Value is an event's delta or a rollup's value.
	Value int64
}

// decodeEventValue decodes the cell stored under a key of kind k.
func decodeEventValue(k eventKeyParts, raw []byte) (eventValue, error) {
	c, err := decodeCell(raw)
	if err != nil {
		return eventValue{}, err
	}
	v := eventValue{Timestamp: c.Timestamp, Deleted: c.Tombstone}
	switch k.Kind {
	case kindBucketDeletion:
		if !c.Tombstone {
			return eventValue{}, fmt.Errorf("%w: bucket deletion cell is not a tombstone", errCorrupt)
		}
	case kindEvent, kindRollup:
		if c.Tombstone {
			// Neither is ever deleted cell by cell.
			return eventValue{}, fmt.Errorf("%w: tombstone where a value belongs", errCorrupt)
		}
		if len(c.Payload) != int64Len {
			return eventValue{}, fmt.Errorf("%w: %d-byte payload, want %d", errCorrupt, len(c.Payload), int64Len)
		}
		v.Value = int64(binary.BigEndian.Uint64(c.Payload))
		if k.Kind == kindEvent && c.Timestamp != k.Time {
			return eventValue{}, fmt.Errorf("%w: event at time %d written at timestamp %d", errCorrupt, k.Time, c.Timestamp)
		}
	case kindMarker:
		if len(c.Payload) != 0 {
			return eventValue{}, fmt.Errorf("%w: marker with a %d-byte payload", errCorrupt, len(c.Payload))
		}
	case kindSeal:
		return eventValue{}, fmt.Errorf("%w: a seal is not a cell (decodeEventSeal reads it)", errCorrupt)
	default:
		return eventValue{}, fmt.Errorf("%w: no value belongs to key kind %d", errCorrupt, k.Kind)
	}
	return v, nil
}

// encodeEventValue is decodeEventValue's inverse, for writes and the fuzz
// test.
func encodeEventValue(k eventKeyKind, v eventValue) []byte {
	c := cell{Timestamp: v.Timestamp, Tombstone: v.Deleted}
	if !v.Deleted && (k == kindEvent || k == kindRollup) {
		c.Payload = binary.BigEndian.AppendUint64(make([]byte, 0, int64Len), uint64(v.Value))
	}
	return appendCell(make([]byte, 0, cellHeaderLen+len(c.Payload)), c)
}
