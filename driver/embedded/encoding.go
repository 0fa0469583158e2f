package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/bytereader"
)

// errCorrupt marks stored bytes that this version cannot decode: a torn or
// corrupted value, or one written by a newer, incompatible version.
var errCorrupt = errors.New("corrupt or incompatible stored value")

// ---- cells -----------------------------------------------------------------

// cellVersion is the format version of a cell. A reader refuses versions it
// does not know rather than guess, so a downgrade cannot silently misread
// data written by a newer Abacus.
const cellVersion byte = 1

const (
	cellFlagTombstone byte = 1 << 0
	cellKnownFlags         = cellFlagTombstone
)

// cellHeaderLen is version (1) + flags (1) + timestamp (8).
const cellHeaderLen = 10

// cell is one last-write-wins value: what Cassandra would keep per cell.
type cell struct {
	Timestamp int64
	Tombstone bool
	// Payload is the row's encoded content (empty for a tombstone). It
	// aliases the decoded buffer.
	Payload []byte
}

func appendCell(b []byte, c cell) []byte {
	var flags byte
	if c.Tombstone {
		flags |= cellFlagTombstone
	}
	b = append(b, cellVersion, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(c.Timestamp))
	return append(b, c.Payload...)
}

func decodeCell(b []byte) (cell, error) {
	if len(b) < cellHeaderLen {
		return cell{}, fmt.Errorf("%w: cell of %d bytes is shorter than its header", errCorrupt, len(b))
	}
	if b[0] != cellVersion {
		return cell{}, fmt.Errorf("%w: cell format version %d, this build reads only version %d", errCorrupt, b[0], cellVersion)
	}
	flags := b[1]
	if flags&^cellKnownFlags != 0 {
		return cell{}, fmt.Errorf("%w: unknown cell flags 0x%02x", errCorrupt, flags)
	}
	c := cell{
		Tombstone: flags&cellFlagTombstone != 0,
		Timestamp: int64(binary.BigEndian.Uint64(b[2:cellHeaderLen])),
		Payload:   b[cellHeaderLen:],
	}
	if c.Tombstone && len(c.Payload) != 0 {
		return cell{}, fmt.Errorf("%w: tombstone carries %d bytes of payload", errCorrupt, len(c.Payload))
	}
	return c, nil
}

// ---- shard rows --------------------------------------------------------------

// A shard row's payload is expires_at (8 bytes, big-endian two's complement)
// followed by the state. The state needs no length because it runs to the
// end. Versioning is the enclosing cell's.
const shardPayloadMin = 8

func appendShardPayload(b []byte, s driver.Shard) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(s.ExpiresAt))
	return append(b, s.State...)
}

// decodeShardPayload returns the shard's expiry and state; state aliases p.
func decodeShardPayload(p []byte) (expiresAt int64, state []byte, err error) {
	if len(p) < shardPayloadMin {
		return 0, nil, fmt.Errorf("%w: shard row of %d bytes is shorter than its expiry", errCorrupt, len(p))
	}
	return int64(binary.BigEndian.Uint64(p[:8])), p[8:], nil
}

// The tally's payload is its state verbatim; its timestamp is the cell's.

// ---- namespace records ---------------------------------------------------------

// namespaceVersion is the format version of a namespace record. Namespace
// records are plain values (not LWW cells): they are only ever created once.
const namespaceVersion byte = 1

// Layout, version 1:
//
//	version          byte
//	name             string
//	model            string
//	type             string
//	read consistency byte
//	write consistency byte
//	retention        int64, nanoseconds, big-endian
//	created_at secs  int64, Unix seconds, big-endian
//	created_at nanos uint32, big-endian, < 1e9
//	option count     uvarint
//	options          count × (key string, value string), keys strictly ascending
//
// where string is a uvarint length followed by that many bytes. Every
// integer has exactly one valid encoding, so decode followed by encode gives
// back the same bytes; the fuzz test relies on this.

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func encodeNamespace(ns *driver.Namespace) ([]byte, error) {
	if err := checkConsistency(ns.ReadConsistency); err != nil {
		return nil, fmt.Errorf("read consistency: %w", err)
	}
	if err := checkConsistency(ns.WriteConsistency); err != nil {
		return nil, fmt.Errorf("write consistency: %w", err)
	}
	b := make([]byte, 0, 64+len(ns.Name)+len(ns.Model)+len(ns.Type))
	b = append(b, namespaceVersion)
	b = appendString(b, ns.Name)
	b = appendString(b, ns.Model)
	b = appendString(b, ns.Type)
	b = append(b, byte(ns.ReadConsistency), byte(ns.WriteConsistency))
	b = binary.BigEndian.AppendUint64(b, uint64(ns.Retention))
	b = binary.BigEndian.AppendUint64(b, uint64(ns.CreatedAt.Unix()))
	b = binary.BigEndian.AppendUint32(b, uint32(ns.CreatedAt.Nanosecond()))
	b = binary.AppendUvarint(b, uint64(len(ns.Options)))
	for _, k := range slices.Sorted(maps.Keys(ns.Options)) {
		b = appendString(b, k)
		b = appendString(b, ns.Options[k])
	}
	return b, nil
}

func checkConsistency(c driver.Consistency) error {
	if c > driver.Any {
		return fmt.Errorf("unknown consistency level %d", uint8(c))
	}
	return nil
}

// reader decodes a stored record (package bytereader), its errors
// wrapping errCorrupt.
type reader struct{ bytereader.Reader }

func newReader(b []byte) reader {
	return reader{bytereader.Reader{B: b, Corrupt: errCorrupt}}
}

func decodeNamespace(b []byte) (*driver.Namespace, error) {
	r := newReader(b)
	if v := r.Byte("version"); r.Err == nil && v != namespaceVersion {
		return nil, fmt.Errorf("%w: namespace format version %d, this build reads only version %d", errCorrupt, v, namespaceVersion)
	}
	ns := &driver.Namespace{}
	ns.Name = r.String("name")
	ns.Model = r.String("model")
	ns.Type = r.String("type")
	ns.ReadConsistency = driver.Consistency(r.Byte("read consistency"))
	ns.WriteConsistency = driver.Consistency(r.Byte("write consistency"))
	ns.Retention = time.Duration(r.Uint64("retention"))
	secs := int64(r.Uint64("created_at"))
	nanos := r.Uint32("created_at")
	count := r.Uvarint("option count")
	if r.Err != nil {
		return nil, r.Err
	}
	if err := checkConsistency(ns.ReadConsistency); err != nil {
		return nil, fmt.Errorf("%w: read %v", errCorrupt, err)
	}
	if err := checkConsistency(ns.WriteConsistency); err != nil {
		return nil, fmt.Errorf("%w: write %v", errCorrupt, err)
	}
	if nanos >= 1e9 {
		return nil, fmt.Errorf("%w: created_at nanoseconds %d out of range", errCorrupt, nanos)
	}
	// time.Unix(...).UTC() of the zero time's seconds is the zero time,
	// so an unset CreatedAt round-trips as unset.
	ns.CreatedAt = time.Unix(secs, int64(nanos)).UTC()
	// Each option takes at least two bytes, which bounds a corrupt count.
	if count > uint64(len(r.B))/2 || count > math.MaxInt32 {
		return nil, fmt.Errorf("%w: %d options cannot fit in %d bytes", errCorrupt, count, len(r.B))
	}
	if count > 0 {
		ns.Options = make(map[string]string, count)
		prev := ""
		for i := range count {
			k := r.String("option key")
			v := r.String("option value")
			if r.Err != nil {
				return nil, r.Err
			}
			if i > 0 && k <= prev {
				return nil, fmt.Errorf("%w: option keys out of order (%q after %q)", errCorrupt, k, prev)
			}
			ns.Options[k] = v
			prev = k
		}
	}
	if len(r.B) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes after namespace record", errCorrupt, len(r.B))
	}
	return ns, nil
}
