package cassandra

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
)

// Message attributes are one blob cell, not a CQL map: Cassandra 2.1 has
// no frozen<map>, and a non-frozen map's whole-value write and delete are
// range tombstones, which 2.1 compacts in quadratic time (see
// deleteMessage). The blob is
//
//	version (1) | uvarint count (≥ 1) | count × (name, value)
//
// with each string a uvarint length and its bytes, names ascending and
// distinct: one encoding per value, so decode then encode gives back the
// same bytes (FuzzDecodeAttributes).
const attributesVersion byte = 1

// encodeAttributes encodes attrs; nil for none, which is never written.
func encodeAttributes(attrs map[string]string) []byte {
	if len(attrs) == 0 {
		return nil
	}
	b := []byte{attributesVersion}
	b = binary.AppendUvarint(b, uint64(len(attrs)))
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		for _, s := range []string{name, attrs[name]} {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
	}
	return b
}

// decodeAttributes decodes what encodeAttributes wrote; a null cell (nil)
// is no attributes.
func decodeAttributes(b []byte) (map[string]string, error) {
	if b == nil {
		return nil, nil
	}
	bad := func(format string, args ...any) (map[string]string, error) {
		return nil, fmt.Errorf("attributes: %s", fmt.Sprintf(format, args...))
	}
	if len(b) == 0 || b[0] != attributesVersion {
		return bad("not format version %d", attributesVersion)
	}
	b = b[1:]
	uvarint := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 || n != len(binary.AppendUvarint(nil, v)) {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	count, ok := uvarint()
	if !ok || count == 0 || count > uint64(len(b))/2 {
		return bad("bad count")
	}
	attrs := make(map[string]string, count)
	prev := ""
	for i := range count {
		var pair [2]string
		for j := range pair {
			l, ok := uvarint()
			if !ok || l > uint64(len(b)) {
				return bad("entry %d: bad length", i)
			}
			pair[j], b = string(b[:l]), b[l:]
		}
		if i > 0 && pair[0] <= prev {
			return bad("name %q after %q: out of order", pair[0], prev)
		}
		attrs[pair[0]], prev = pair[1], pair[0]
	}
	if len(b) != 0 {
		return bad("%d trailing bytes", len(b))
	}
	return attrs, nil
}
