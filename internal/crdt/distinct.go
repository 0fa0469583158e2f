package crdt

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/axiomhq/hyperloglog"
)

// Layout of the library's version 2 binary form at our fixed precision. We
// check it ourselves before handing bytes to the library so that hostile
// input is refused by code we control.
const (
	sketchVersion   = 2
	sketchPrecision = 14
	sketchRegisters = 1 << sketchPrecision
	sketchHeaderLen = 8  // version, precision, bias, sparse flag, uint32 count
	sketchListHdr   = 12 // compressed list: count, last, stream size
	sketchDenseLen  = sketchHeaderLen + sketchRegisters
	// maxSketchLen is the largest canonical sketch: sparse, with an empty
	// insertion buffer and a list at the library's dense-conversion limit
	// of one byte per register.
	maxSketchLen = sketchHeaderLen + sketchListHdr + sketchRegisters
)

// Distinct estimates the number of distinct items inserted, using a
// HyperLogLog sketch at precision 14 (about 0.8% standard error).
//
// The zero value is an empty Distinct; NewDistinct is equivalent.
type Distinct struct {
	sk    *hyperloglog.Sketch // nil only in the zero value
	empty bool                // inverted so that the zero value is empty
	// tidy means sk is in canonical form: no buffered sparse insertions and
	// no oversized sparse list. Only then do the library's Estimate and
	// AppendBinary neither write to sk nor depend on its history, so reads
	// can use sk directly instead of a canonicalized copy.
	tidy bool
}

var _ State = (*Distinct)(nil)

// NewDistinct returns an empty Distinct.
func NewDistinct() *Distinct {
	return &Distinct{sk: hyperloglog.New14(), empty: true, tidy: true}
}

// Kind returns KindDistinct.
func (*Distinct) Kind() Kind { return KindDistinct }

// Empty reports whether no item has been inserted or merged in.
func (d *Distinct) Empty() bool { return d.sk == nil || d.empty }

// Value returns the estimated number of distinct items.
func (d *Distinct) Value() int64 {
	if d.sk == nil {
		return 0
	}
	est := d.canonical().Estimate()
	if est > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(est)
}

// Apply inserts op.Item, which must be non-empty: an empty item almost always
// means a caller forgot to set it, and counting it would hide the mistake.
func (d *Distinct) Apply(op Op) error {
	if len(op.Item) == 0 {
		return fmt.Errorf("%w: a distinct update needs Op.Item", ErrEmptyItem)
	}
	d.init()
	d.sk.Insert(op.Item)
	d.empty, d.tidy = false, false
	return nil
}

// Merge folds other's sketch into d (the union of the two item sets).
func (d *Distinct) Merge(other State) error {
	o, ok := other.(*Distinct)
	if !ok || o == nil {
		return mismatch(KindDistinct, other)
	}
	if o == d || o.Empty() {
		// Merge is idempotent, and the library's merge would otherwise read
		// the sketch it is writing.
		return nil
	}
	d.init()
	if err := d.sk.Merge(o.sk); err != nil {
		// Unreachable while every sketch has precision 14; the library
		// checks before writing, so d is unchanged.
		return fmt.Errorf("crdt: merging distinct: %w", err)
	}
	d.empty, d.tidy = false, false
	return nil
}

// Clone returns a deep copy.
func (d *Distinct) Clone() State {
	if d.sk == nil {
		return NewDistinct()
	}
	return &Distinct{sk: d.sk.Clone(), empty: d.empty, tidy: d.tidy}
}

// MarshalBinary encodes d canonically (see the package doc).
func (d *Distinct) MarshalBinary() ([]byte, error) {
	sk := d.sk
	if sk == nil {
		sk = hyperloglog.New14()
	}
	b, err := sk.AppendBinary(header(KindDistinct, sketchHeaderLen))
	if err == nil && !d.tidy && !canonicalSketch(b[headerLen:]) {
		// Encoding first and checking the result is cheaper than always
		// canonicalizing: a dense sketch needs nothing, and copying one is
		// far cheaper than the estimate that canonicalizing would compute.
		b, err = d.canonical().AppendBinary(b[:headerLen])
	}
	if err != nil {
		return nil, fmt.Errorf("crdt: encoding distinct: %w", err)
	}
	if len(b) > maxEncodedLen {
		// Never write a row Decode would refuse.
		return nil, fmt.Errorf("crdt: encoding distinct: %d bytes exceeds the maximum of %d", len(b), maxEncodedLen)
	}
	return b, nil
}

func (d *Distinct) init() {
	if d.sk == nil {
		*d = *NewDistinct()
	}
}

// canonical returns d's sketch in canonical form without writing to d.
// Estimate is the library's only exported way to drain the sparse insertion
// buffer (and go dense when the sparse list outgrows the registers), so it
// is run on a copy.
func (d *Distinct) canonical() *hyperloglog.Sketch {
	if d.tidy {
		return d.sk
	}
	c := d.sk.Clone()
	c.Estimate()
	return c
}

func decodeDistinct(p []byte) (*Distinct, error) {
	if len(p) < sketchHeaderLen {
		return nil, corrupt("distinct payload is %d bytes, need at least %d", len(p), sketchHeaderLen)
	}
	if p[0] != sketchVersion || p[1] != sketchPrecision || p[2] != 0 {
		return nil, corrupt("distinct sketch header % x, want version %d, precision %d, bias 0",
			p[:3], sketchVersion, sketchPrecision)
	}
	count := binary.BigEndian.Uint32(p[4:8])
	var empty, tidy bool
	switch p[3] {
	case 0: // dense: the count is the number of registers
		if count != sketchRegisters || len(p) != sketchDenseLen {
			return nil, corrupt("dense sketch declares %d registers in %d bytes, want %d in %d",
				count, len(p), sketchRegisters, sketchDenseLen)
		}
		empty, tidy = allZero(p[sketchHeaderLen:]), true
	case 1: // sparse: the count is the number of buffered keys
		listAt := sketchHeaderLen + 4*uint64(count)
		if listAt+sketchListHdr > uint64(len(p)) {
			return nil, corrupt("sparse sketch with %d buffered keys is truncated (%d bytes)", count, len(p))
		}
		list := p[listAt:]
		size := binary.BigEndian.Uint32(list[8:12])
		if uint64(size) != uint64(len(list)-sketchListHdr) {
			return nil, corrupt("sparse sketch list declares %d bytes, has %d", size, len(list)-sketchListHdr)
		}
		listCount := binary.BigEndian.Uint32(list[0:4])
		empty = count == 0 && listCount == 0
		tidy = canonicalSketch(p)
	default:
		return nil, corrupt("sketch representation byte %d, want 0 or 1", p[3])
	}
	sk := new(hyperloglog.Sketch)
	if err := guard(func() error { return sk.UnmarshalBinary(p) }); err != nil {
		return nil, err
	}
	return &Distinct{sk: sk, empty: empty, tidy: tidy}, nil
}

// canonicalSketch reports whether p, a well-formed sketch encoding, is in the
// form canonical() would produce: dense, or sparse with no buffered keys and
// a list no longer than the dense registers.
func canonicalSketch(p []byte) bool {
	if p[3] == 0 {
		return true
	}
	return binary.BigEndian.Uint32(p[4:8]) == 0 && len(p) <= maxSketchLen
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// guard runs the library's decoder, turning its errors and, as a last line of
// defence, its panics into ErrCorrupt. Our own checks above should already
// exclude every input that could make it panic.
func guard(decode func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = corrupt("sketch decoder panicked: %v", r)
		}
	}()
	if err := decode(); err != nil {
		return fmt.Errorf("%w: sketch: %w", ErrCorrupt, err)
	}
	return nil
}
