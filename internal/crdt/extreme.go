package crdt

import (
	"encoding/binary"
)

// extreme is the content shared by Max and Min. The flag is needed because
// every int64 is a legitimate observation, so no value can mean "unset".
type extreme struct {
	set bool
	v   int64
}

const extremePayloadLen = 9

// Value returns the extreme observed, or 0 if there is none.
func (e *extreme) Value() int64 { return e.v }

// Empty reports whether nothing has been observed.
func (e *extreme) Empty() bool { return !e.set }

// take folds in observation v; replace reports whether v beats the current one.
func (e *extreme) take(v int64, replace func(cur, v int64) bool) {
	if !e.set || replace(e.v, v) {
		e.set, e.v = true, v
	}
}

func (e *extreme) marshal(k Kind) []byte {
	b := header(k, extremePayloadLen)
	var flag byte
	if e.set {
		flag = 1
	}
	b = append(b, flag)
	return binary.BigEndian.AppendUint64(b, uint64(e.v))
}

func decodeExtreme(payload []byte, k Kind) (extreme, error) {
	if len(payload) != extremePayloadLen {
		return extreme{}, corrupt("%s payload is %d bytes, want %d", k, len(payload), extremePayloadLen)
	}
	v := int64(binary.BigEndian.Uint64(payload[1:]))
	switch payload[0] {
	case 0:
		// MarshalBinary writes 0 for an empty state; accepting anything else
		// would give one state two encodings.
		if v != 0 {
			return extreme{}, corrupt("empty %s carries value %d", k, v)
		}
		return extreme{}, nil
	case 1:
		return extreme{set: true, v: v}, nil
	default:
		return extreme{}, corrupt("%s flag byte is %d, want 0 or 1", k, payload[0])
	}
}

func greater(cur, v int64) bool { return v > cur }
func less(cur, v int64) bool    { return v < cur }

// Max keeps the largest value observed. The zero value is empty.
type Max struct{ extreme }

var _ State = (*Max)(nil)

// Kind returns KindMax.
func (*Max) Kind() Kind { return KindMax }

// Apply observes op.Delta. It never fails.
func (m *Max) Apply(op Op) error { m.take(op.Delta, greater); return nil }

// Merge keeps the larger of the two maxima; merging an empty state is a no-op.
func (m *Max) Merge(other State) error {
	o, ok := other.(*Max)
	if !ok || o == nil {
		return mismatch(KindMax, other)
	}
	if o.set {
		m.take(o.v, greater)
	}
	return nil
}

// Clone returns a copy.
func (m *Max) Clone() State { c := *m; return &c }

// MarshalBinary encodes m (see the package doc).
func (m *Max) MarshalBinary() ([]byte, error) { return m.marshal(KindMax), nil }

// Min keeps the smallest value observed. The zero value is empty.
type Min struct{ extreme }

var _ State = (*Min)(nil)

// Kind returns KindMin.
func (*Min) Kind() Kind { return KindMin }

// Apply observes op.Delta. It never fails.
func (m *Min) Apply(op Op) error { m.take(op.Delta, less); return nil }

// Merge keeps the smaller of the two minima; merging an empty state is a no-op.
func (m *Min) Merge(other State) error {
	o, ok := other.(*Min)
	if !ok || o == nil {
		return mismatch(KindMin, other)
	}
	if o.set {
		m.take(o.v, less)
	}
	return nil
}

// Clone returns a copy.
func (m *Min) Clone() State { c := *m; return &c }

// MarshalBinary encodes m (see the package doc).
func (m *Min) MarshalBinary() ([]byte, error) { return m.marshal(KindMin), nil }
