package embedded

import (
	"encoding/binary"
	"fmt"
)

// Tables of the actor, native and cas counter models. Like the others,
// their bytes are part of the on-disk format: never renumber them.
const (
	// tableActorValues holds one LWW cell per (namespace, counter, actor)
	// whose timestamp is the actor's version and whose payload is its
	// value (appendActorPayload).
	tableActorValues byte = 0x30
	// tableNativeCounters holds one counter value record per (namespace,
	// counter), changed by read-modify-write under a lock.
	tableNativeCounters byte = 0x31
	// tableCASCounters holds one counter value record per (namespace,
	// counter), changed by compare-and-set under a lock.
	tableCASCounters byte = 0x32
)

func init() {
	componentsPerTable[tableActorValues] = 3    // namespace, counter, actor
	componentsPerTable[tableNativeCounters] = 2 // namespace, counter
	componentsPerTable[tableCASCounters] = 2    // namespace, counter
}

func actorPrefix(ns, counter string) []byte {
	return counterKey(tableActorValues, ns, counter, 0)
}

func actorKey(ns, counter, actor string) []byte {
	return appendComponent(actorPrefix(ns, counter), actor)
}

func nativeKey(ns, counter string) []byte {
	return counterKey(tableNativeCounters, ns, counter, 0)
}

func casKey(ns, counter string) []byte {
	return counterKey(tableCASCounters, ns, counter, 0)
}

// ---- actor values ---------------------------------------------------------------

// An actor cell's payload is its value: the 8 bytes of the big-endian
// two's complement with the top bit of every byte flipped.
//
// The flip is what makes the merge operator settle a tie the way Cassandra
// does. Between two cells at one timestamp, cellWins keeps the greater
// encoding by bytes.Compare, which compares unsigned bytes. Cassandra
// compares the plain big-endian bytes as signed (Java) bytes. Flipping the
// top bit maps signed byte order onto unsigned byte order (-128..127 onto
// 0x00..0xff), so the unsigned comparison of flipped bytes picks the same
// winner as Cassandra: 1500 over 1000, but 127 over 128 and 1 over -1.
const actorPayloadLen = 8

func appendActorPayload(b []byte, v int64) []byte {
	var p [actorPayloadLen]byte
	binary.BigEndian.PutUint64(p[:], uint64(v))
	for i := range p {
		p[i] ^= 0x80
	}
	return append(b, p[:]...)
}

func decodeActorPayload(p []byte) (int64, error) {
	if len(p) != actorPayloadLen {
		return 0, fmt.Errorf("%w: actor value of %d bytes, want %d", errCorrupt, len(p), actorPayloadLen)
	}
	var u [actorPayloadLen]byte
	for i := range u {
		u[i] = p[i] ^ 0x80
	}
	return int64(binary.BigEndian.Uint64(u[:])), nil
}

// ---- native and cas counter values -------------------------------------------

// counterValueVersion is the format version of a native or cas counter's
// record. These are plain values (not LWW cells): they are changed only
// under a lock, by read-modify-write or compare-and-set.
const counterValueVersion byte = 1

// Layout, version 1:
//
//	version byte
//	value   int64, big-endian two's complement
//
// Exactly 9 bytes, so decoding then encoding gives back the same bytes.
const counterValueLen = 1 + 8

func encodeCounterValue(v int64) []byte {
	b := make([]byte, 0, counterValueLen)
	b = append(b, counterValueVersion)
	return binary.BigEndian.AppendUint64(b, uint64(v))
}

func decodeCounterValue(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("%w: empty counter value", errCorrupt)
	}
	if b[0] != counterValueVersion {
		return 0, fmt.Errorf("%w: counter value format version %d, this build reads only version %d", errCorrupt, b[0], counterValueVersion)
	}
	if len(b) != counterValueLen {
		return 0, fmt.Errorf("%w: counter value of %d bytes, want %d", errCorrupt, len(b), counterValueLen)
	}
	return int64(binary.BigEndian.Uint64(b[1:])), nil
}
