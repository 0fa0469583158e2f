package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// rights is a ledger's rights record, decoded: which actors may debit how
// much (docs/ledger.md, "Balance floors"). The record is changed only by
// compare-and-set on version, so every change sees the one before it.
type rights struct {
	version int64
	// spent is the debit total of actors that have left the record: when
	// an actor's rights are returned or reclaimed they shrink to what it
	// used, which stays counted here for good.
	spent  int64
	grants map[string]grant
	// A data center's record (dataCenterRights) hands out its share of
	// the ledger's record, which is at most cap, never the balance: cap
	// is the share the ledger's record holds for the data center as of
	// its version synced. The ledger's own record has neither.
	cap, synced int64
}

// grant is what one actor holds.
type grant struct {
	// total is the debit total the actor may reach, over its whole life:
	// its negative section's sum never exceeds it.
	total int64
	// until is when the actor's lease ends, in microseconds. It sends no
	// write with debits after it (its own clock), so its rights may be
	// reclaimed once every write sent before it has landed.
	until int64
}

// held is everything the record has handed out: spent plus every grant,
// saturating at the int64 bounds (the caller compares it with what the
// balance allows, so saturating only makes it refuse).
func (r *rights) held() int64 {
	sum := r.spent
	for _, g := range r.grants {
		sum = saturatingAdd(sum, g.total)
	}
	return sum
}

func (r *rights) clone() *rights {
	c := *r
	c.grants = maps.Clone(r.grants)
	if c.grants == nil {
		c.grants = map[string]grant{}
	}
	return &c
}

const (
	rightsFormat = 1
	// rightsFormatShare is the format of a record with a cap or a synced
	// version: a data center's record once it holds a share.
	rightsFormatShare = 2
	// maxRightsActors bounds the actors a record may list: a process
	// returns its rights when it drops an actor, so the record holds the
	// live writers of one ledger, not its history.
	maxRightsActors = 100_000
)

var errCorruptRights = fmt.Errorf("%w: rights record", ErrCorrupt)

// encodeRights encodes a record's content (the version is stored beside
// it): a format byte, spent, the cap and synced version (format 2 only,
// when either is set), the number of actors, then each actor in
// ascending order with its grant.
func encodeRights(r *rights) []byte {
	b := []byte{rightsFormat}
	if r.cap != 0 || r.synced != 0 {
		b[0] = rightsFormatShare
	}
	b = binary.AppendVarint(b, r.spent)
	if b[0] == rightsFormatShare {
		b = binary.AppendVarint(b, r.cap)
		b = binary.AppendVarint(b, r.synced)
	}
	b = binary.AppendUvarint(b, uint64(len(r.grants)))
	for _, a := range slices.Sorted(maps.Keys(r.grants)) {
		g := r.grants[a]
		b = binary.AppendUvarint(b, uint64(len(a)))
		b = append(b, a...)
		b = binary.AppendVarint(b, g.total)
		b = binary.AppendVarint(b, g.until)
	}
	return b
}

// decodeRights decodes a stored record strictly: one encoding per record,
// no negative amounts, actors in ascending order without repeats.
func decodeRights(version int64, b []byte) (*rights, error) {
	r := &rights{version: version, grants: map[string]grant{}}
	if version == 0 {
		if len(b) != 0 {
			return nil, fmt.Errorf("%w: no version but %d bytes", errCorruptRights, len(b))
		}
		return r, nil
	}
	if version < 0 {
		return nil, fmt.Errorf("%w: version %d", errCorruptRights, version)
	}
	if len(b) == 0 || (b[0] != rightsFormat && b[0] != rightsFormatShare) {
		return nil, fmt.Errorf("%w: unknown format", errCorruptRights)
	}
	format := b[0]
	b = b[1:]
	varint := func() (int64, error) {
		v, n := binary.Varint(b)
		if n <= 0 || n != len(binary.AppendVarint(nil, v)) {
			return 0, errors.New("bad varint")
		}
		b = b[n:]
		return v, nil
	}
	uvarint := func() (uint64, error) {
		v, n := binary.Uvarint(b)
		if n <= 0 || n != len(binary.AppendUvarint(nil, v)) {
			return 0, errors.New("bad uvarint")
		}
		b = b[n:]
		return v, nil
	}
	var err error
	if r.spent, err = varint(); err != nil || r.spent < 0 {
		return nil, fmt.Errorf("%w: spent: %v", errCorruptRights, err)
	}
	if format == rightsFormatShare {
		if r.cap, err = varint(); err != nil || r.cap < 0 {
			return nil, fmt.Errorf("%w: cap: %v", errCorruptRights, err)
		}
		if r.synced, err = varint(); err != nil || r.synced < 0 {
			return nil, fmt.Errorf("%w: synced version: %v", errCorruptRights, err)
		}
		if r.cap == 0 && r.synced == 0 {
			return nil, fmt.Errorf("%w: format %d without a cap or a synced version", errCorruptRights, format)
		}
	}
	count, err := uvarint()
	if err != nil || count > maxRightsActors {
		return nil, fmt.Errorf("%w: actor count: %v", errCorruptRights, err)
	}
	prev := ""
	for i := range count {
		n, err := uvarint()
		if err != nil || n > uint64(len(b)) || n == 0 {
			return nil, fmt.Errorf("%w: actor %d: bad length", errCorruptRights, i)
		}
		a := string(b[:n])
		b = b[n:]
		if i > 0 && a <= prev {
			return nil, fmt.Errorf("%w: actors out of order", errCorruptRights)
		}
		prev = a
		var g grant
		if g.total, err = varint(); err != nil || g.total < 0 {
			return nil, fmt.Errorf("%w: actor %q: grant: %v", errCorruptRights, a, err)
		}
		if g.until, err = varint(); err != nil {
			return nil, fmt.Errorf("%w: actor %q: lease: %v", errCorruptRights, a, err)
		}
		r.grants[a] = g
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errCorruptRights, len(b))
	}
	return r, nil
}

// saturatingAdd adds, sticking at the int64 bounds instead of wrapping.
func saturatingAdd(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return 1<<63 - 1
	case a < 0 && b < 0 && s >= 0:
		return -1 << 63
	}
	return s
}
