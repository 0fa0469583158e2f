package crdt

import (
	"math"
	"math/big"
)

// Wide is a signed total that cannot overflow. Totals of blind writes from
// many servers (the events and actor models) cannot be refused exactly at
// write time, so they are summed in Wide and only narrowed to int64 where
// a value leaves the library. The zero value is 0.
//
// It holds the total modulo 2^64 and how many times the total crossed the
// int64 range upward minus downward; the exact value is Low + Wraps·2^64.
// Wraps would itself need 2^63 additions to overflow.
type Wide struct {
	low   int64
	wraps int64
}

// WideOf returns v as a Wide.
func WideOf(v int64) Wide { return Wide{low: v} }

// Add adds d.
func (w *Wide) Add(d int64) {
	s := w.low + d
	switch {
	case d > 0 && s < w.low:
		w.wraps++
	case d < 0 && s > w.low:
		w.wraps--
	}
	w.low = s
}

// AddWide adds another total.
func (w *Wide) AddWide(o Wide) {
	w.Add(o.low)
	w.wraps += o.wraps
}

// Int64 returns the total and true when it fits in int64; otherwise the
// nearest int64 (math.MaxInt64 or math.MinInt64) and false.
func (w Wide) Int64() (int64, bool) {
	switch {
	case w.wraps > 0:
		return math.MaxInt64, false
	case w.wraps < 0:
		return math.MinInt64, false
	}
	return w.low, true
}

// Big returns the exact total.
func (w Wide) Big() *big.Int {
	b := new(big.Int).Lsh(big.NewInt(w.wraps), 64)
	return b.Add(b, big.NewInt(w.low))
}

// String returns the exact total in decimal.
func (w Wide) String() string { return w.Big().String() }
