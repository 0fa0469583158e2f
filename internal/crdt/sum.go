package crdt

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// Sum is a PN counter: P is the total of positive deltas and N the total
// magnitude of negative ones. Keeping the two apart rather than one signed
// total is what the CRDT literature prescribes; here it also lets overflow be
// detected per direction. Invariant: P-N fits in int64.
//
// The zero value is an empty Sum.
type Sum struct {
	p, n uint64
}

const sumPayloadLen = 16

var _ State = (*Sum)(nil)

// Kind returns KindSum.
func (*Sum) Kind() Kind { return KindSum }

// P returns the total of positive deltas.
func (s *Sum) P() uint64 { return s.p }

// N returns the total magnitude of negative deltas.
func (s *Sum) N() uint64 { return s.n }

// Value returns P-N.
func (s *Sum) Value() int64 { return int64(s.p - s.n) }

// Empty reports whether P and N are both zero.
func (s *Sum) Empty() bool { return s.p == 0 && s.n == 0 }

// Clone returns a copy.
func (s *Sum) Clone() State { c := *s; return &c }

// Apply adds op.Delta. It returns ErrOverflow, leaving s unchanged, if P or N
// would overflow or P-N would leave int64.
func (s *Sum) Apply(op Op) error {
	p, n := s.p, s.n
	var carry uint64
	if op.Delta >= 0 {
		p, carry = bits.Add64(p, uint64(op.Delta), 0)
	} else {
		// 0 - uint64(d) is |d| even for math.MinInt64, whose negation does
		// not fit in int64.
		n, carry = bits.Add64(n, 0-uint64(op.Delta), 0)
	}
	if carry != 0 || !inRange(p, n) {
		return fmt.Errorf("%w: sum %d (P=%d N=%d) + %d", ErrOverflow, s.Value(), s.p, s.n, op.Delta)
	}
	s.p, s.n = p, n
	return nil
}

// Merge adds other's P and N to s's. Shards are disjoint writers, so adding
// is the right combination; merging a state into itself double-counts. It
// returns ErrOverflow, leaving s unchanged, under the same conditions as
// Apply.
func (s *Sum) Merge(other State) error {
	o, ok := other.(*Sum)
	if !ok || o == nil {
		return mismatch(KindSum, other)
	}
	p, cp := bits.Add64(s.p, o.p, 0)
	n, cn := bits.Add64(s.n, o.n, 0)
	if cp != 0 || cn != 0 || !inRange(p, n) {
		return fmt.Errorf("%w: merging sum (P=%d N=%d) into (P=%d N=%d)", ErrOverflow, o.p, o.n, s.p, s.n)
	}
	s.p, s.n = p, n
	return nil
}

// MarshalBinary encodes s (see the package doc).
func (s *Sum) MarshalBinary() ([]byte, error) {
	b := header(KindSum, sumPayloadLen)
	b = binary.BigEndian.AppendUint64(b, s.p)
	return binary.BigEndian.AppendUint64(b, s.n), nil
}

func decodeSum(payload []byte) (*Sum, error) {
	if len(payload) != sumPayloadLen {
		return nil, corrupt("sum payload is %d bytes, want %d", len(payload), sumPayloadLen)
	}
	p := binary.BigEndian.Uint64(payload)
	n := binary.BigEndian.Uint64(payload[8:])
	if !inRange(p, n) {
		return nil, corrupt("sum P=%d N=%d: P-N is outside int64", p, n)
	}
	return &Sum{p: p, n: n}, nil
}

// inRange reports whether p-n is representable as an int64.
func inRange(p, n uint64) bool {
	if p >= n {
		return p-n <= math.MaxInt64
	}
	return n-p <= 1<<63
}

// AddInt64 returns a+b and whether it fits in int64. Every signed total
// outside the Sum state (event sums, actor sums, compare-and-set and
// native adds) checks its additions with it.
func AddInt64(a, b int64) (int64, bool) {
	s := a + b
	// Overflow happened iff a and b have the same sign and s has the other.
	return s, (a^s)&(b^s) >= 0
}

// PNTotal adds Sum states exactly, in 128-bit P and N, so that whether
// their total fits one Sum does not depend on the order they are added in:
// Merge checks every partial result, and (MaxInt64) + (+1) + (-5) fails
// there although the total fits. The zero value is an empty total.
type PNTotal struct {
	pHi, pLo, nHi, nLo uint64
}

// Add adds s's P and N.
func (t *PNTotal) Add(s *Sum) {
	var c uint64
	t.pLo, c = bits.Add64(t.pLo, s.p, 0)
	t.pHi += c
	t.nLo, c = bits.Add64(t.nLo, s.n, 0)
	t.nHi += c
}

// Sum returns the total as one state, or false if it does not fit one: P or
// N past 64 bits, or P-N outside int64.
func (t *PNTotal) Sum() (*Sum, bool) {
	if t.pHi != 0 || t.nHi != 0 || !inRange(t.pLo, t.nLo) {
		return nil, false
	}
	return &Sum{p: t.pLo, n: t.nLo}, true
}
