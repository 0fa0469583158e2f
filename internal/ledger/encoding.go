package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/abacusdb/abacus/internal/bytereader"
)

// ErrCorrupt marks a stored actor row this version cannot decode: damaged,
// or written by a newer, incompatible Abacus.
var ErrCorrupt = errors.New("corrupt or incompatible ledger row")

// encodingVersion is the first byte of every encoded actor row. Decoders
// refuse versions they do not know rather than guess.
const encodingVersion byte = 1

// An actor row, version 1:
//
//	version  byte (1)
//	P, N     two sections, each:
//	  total    uvarint   (≤ MaxInt64)
//	  folded   uvarint   (entries folded into total)
//	  count    uvarint   (entries in the history)
//	  count × (request id: uvarint length + UTF-8 bytes, amount: uvarint ≥ 1)
//
// Every integer has one valid encoding (minimal varints) and nothing may
// follow the N section, so decoding then encoding gives back the same
// bytes; the fuzz test relies on it.

// EncodeActor returns the stored form of an actor's state.
func EncodeActor(a *Actor) []byte {
	n := 1
	for _, s := range []*Section{&a.P, &a.N} {
		n += 3 * binary.MaxVarintLen64
		for _, e := range s.History {
			n += binary.MaxVarintLen64*2 + len(e.RequestID)
		}
	}
	b := make([]byte, 0, n)
	b = append(b, encodingVersion)
	for _, s := range []*Section{&a.P, &a.N} {
		b = binary.AppendUvarint(b, uint64(s.Total))
		b = binary.AppendUvarint(b, s.Folded)
		b = binary.AppendUvarint(b, uint64(len(s.History)))
		for _, e := range s.History {
			b = binary.AppendUvarint(b, uint64(len(e.RequestID)))
			b = append(b, e.RequestID...)
			b = binary.AppendUvarint(b, uint64(e.Amount))
		}
	}
	return b
}

// DecodeActor parses a stored actor row. Stored bytes are untrusted: any
// input yields a well-formed state or an error wrapping ErrCorrupt.
func DecodeActor(b []byte) (*Actor, error) {
	r := reader{bytereader.Reader{B: b, Corrupt: ErrCorrupt}}
	if v := r.Byte("format version"); r.Err == nil && v != encodingVersion {
		return nil, fmt.Errorf("%w: format version %d, this build reads only version %d", ErrCorrupt, v, encodingVersion)
	}
	a := &Actor{}
	for i, s := range []*Section{&a.P, &a.N} {
		name := [...]string{"positive", "negative"}[i]
		if err := r.section(s); err != nil {
			return nil, fmt.Errorf("%s section: %w", name, err)
		}
	}
	if r.Err != nil {
		return nil, r.Err
	}
	if len(r.B) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(r.B))
	}
	return a, nil
}

// reader decodes a ledger row (package bytereader), its errors wrapping
// ErrCorrupt.
type reader struct{ bytereader.Reader }

func (r *reader) section(s *Section) error {
	total := r.Uvarint("total")
	folded := r.Uvarint("folded count")
	count := r.Uvarint("history length")
	if r.Err != nil {
		return r.Err
	}
	if total > math.MaxInt64 {
		return fmt.Errorf("%w: total %d overflows int64", ErrCorrupt, total)
	}
	// Every folded entry had an amount of at least 1.
	if (folded == 0) != (total == 0) || total < folded {
		return fmt.Errorf("%w: total %d cannot come from folding %d entries", ErrCorrupt, total, folded)
	}
	// An entry takes at least 3 bytes (length, one byte of id, amount); this
	// bounds the allocation a corrupt count can ask for.
	if count > uint64(len(r.B))/3 {
		return fmt.Errorf("%w: %d entries cannot fit in %d bytes", ErrCorrupt, count, len(r.B))
	}
	if folded > math.MaxUint64-count {
		return fmt.Errorf("%w: entry numbers overflow", ErrCorrupt)
	}
	s.Total, s.Folded = int64(total), folded
	if count > 0 {
		s.History = make([]Entry, 0, count)
	}
	sum := s.Total
	for i := range count {
		n := r.Uvarint("request id length")
		if r.Err != nil {
			return r.Err
		}
		if n > uint64(len(r.B)) {
			return fmt.Errorf("%w: entry %d: request id of %d bytes overruns the row", ErrCorrupt, i, n)
		}
		id := string(r.B[:n])
		r.B = r.B[n:]
		amt := r.Uvarint("amount")
		if r.Err != nil {
			return r.Err
		}
		if err := ValidateRequestID(id); err != nil {
			return fmt.Errorf("%w: entry %d: %v", ErrCorrupt, i, err)
		}
		if amt == 0 || amt > math.MaxInt64 {
			return fmt.Errorf("%w: entry %d: amount %d is not in 1..MaxInt64", ErrCorrupt, i, amt)
		}
		if sum > math.MaxInt64-int64(amt) {
			return fmt.Errorf("%w: section sum overflows int64", ErrCorrupt)
		}
		sum += int64(amt)
		s.History = append(s.History, Entry{RequestID: id, Amount: int64(amt)})
	}
	return nil
}
