package embedded

import (
	"encoding/binary"
	"fmt"

	"github.com/abacusdb/abacus/driver"
)

// claimVersion is the format version of a stored claim. Claims are plain
// values (not LWW cells): they are only ever written under claimState's
// mutex, by check-then-set.
const claimVersion byte = 1

// Layout, version 1:
//
//	version    byte
//	expires_at int64, µs since the epoch, big-endian
//	negative   byte, 0 or 1
//	seq        uvarint
//	amount     int64, big-endian two's complement, not 0
//	actor      string (uvarint length, bytes)
//
// Every field has one valid encoding and nothing may follow the actor, so
// decoding then encoding gives back the same bytes.

func encodeClaim(c driver.Claim, expiresAt int64) []byte {
	b := make([]byte, 0, 1+8+1+binary.MaxVarintLen64+8+binary.MaxVarintLen32+len(c.Actor))
	b = append(b, claimVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(expiresAt))
	neg := byte(0)
	if c.Negative {
		neg = 1
	}
	b = append(b, neg)
	b = binary.AppendUvarint(b, c.Seq)
	b = binary.BigEndian.AppendUint64(b, uint64(c.Amount))
	return appendString(b, c.Actor)
}

func decodeClaim(b []byte) (driver.Claim, int64, error) {
	r := newReader(b)
	if v := r.Byte("version"); r.Err == nil && v != claimVersion {
		return driver.Claim{}, 0, fmt.Errorf("%w: claim format version %d, this build reads only version %d", errCorrupt, v, claimVersion)
	}
	expires := int64(r.Uint64("expires_at"))
	neg := r.Byte("negative")
	var c driver.Claim
	c.Seq = r.Uvarint("seq")
	c.Amount = int64(r.Uint64("amount"))
	c.Actor = r.String("actor")
	if r.Err != nil {
		return driver.Claim{}, 0, r.Err
	}
	switch {
	case neg > 1:
		return driver.Claim{}, 0, fmt.Errorf("%w: claim negative flag %d", errCorrupt, neg)
	case c.Amount == 0:
		return driver.Claim{}, 0, fmt.Errorf("%w: claim amount is zero", errCorrupt)
	case len(r.B) != 0:
		return driver.Claim{}, 0, fmt.Errorf("%w: %d trailing bytes after claim", errCorrupt, len(r.B))
	}
	c.Negative = neg == 1
	return c, expires, nil
}

// rightsVersion is the format version of a stored ledger rights record.
// Rights records are plain values (not LWW cells): they are only ever
// written under rightsMu, by compare-and-set on the record's own version.
const rightsVersion byte = 1

// Layout, version 1:
//
//	version  byte
//	record   int64, the record's Version, big-endian, at least 1
//	state    the rest of the value, opaque
//
// The state runs to the end and the record's version has one encoding, so
// decoding then encoding gives back the same bytes.
const rightsHeaderLen = 1 + 8

func encodeRights(r driver.LedgerRights) []byte {
	b := make([]byte, 0, rightsHeaderLen+len(r.State))
	b = append(b, rightsVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(r.Version))
	return append(b, r.State...)
}

// decodeRights decodes a stored rights record; its State aliases b.
func decodeRights(b []byte) (driver.LedgerRights, error) {
	if len(b) == 0 {
		return driver.LedgerRights{}, fmt.Errorf("%w: empty ledger rights record", errCorrupt)
	}
	if b[0] != rightsVersion {
		return driver.LedgerRights{}, fmt.Errorf("%w: ledger rights format version %d, this build reads only version %d", errCorrupt, b[0], rightsVersion)
	}
	if len(b) < rightsHeaderLen {
		return driver.LedgerRights{}, fmt.Errorf("%w: ledger rights record of %d bytes is shorter than its header", errCorrupt, len(b))
	}
	r := driver.LedgerRights{Version: int64(binary.BigEndian.Uint64(b[1:rightsHeaderLen])), State: b[rightsHeaderLen:]}
	if r.Version < 1 {
		return driver.LedgerRights{}, fmt.Errorf("%w: ledger rights version %d", errCorrupt, r.Version)
	}
	return r, nil
}
