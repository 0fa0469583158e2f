package crdt

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sentinel errors. Functions wrap them with detail, so match with errors.Is.
var (
	// ErrKindMismatch: Merge was given a state of another kind.
	ErrKindMismatch = errors.New("crdt: kind mismatch")
	// ErrOverflow: a sum update or merge would leave the representable range.
	ErrOverflow = errors.New("crdt: overflow")
	// ErrCorrupt: Decode was given bytes that are not a valid encoding.
	ErrCorrupt = errors.New("crdt: corrupt encoding")
	// ErrEmptyItem: a distinct state was asked to insert an empty item.
	ErrEmptyItem = errors.New("crdt: empty item")
	// ErrUnknownKind: a kind name or number is not one this package knows.
	ErrUnknownKind = errors.New("crdt: unknown kind")
)

// Kind identifies a state type. Its numeric value is stored in encodings and
// must never be reassigned.
type Kind uint8

// The kinds. Zero is deliberately unused so an unset field is never a valid
// kind.
const (
	KindSum      Kind = 1
	KindMax      Kind = 2
	KindMin      Kind = 3
	KindDistinct Kind = 4
)

var kindNames = [...]string{KindSum: "sum", KindMax: "max", KindMin: "min", KindDistinct: "distinct"}

func (k Kind) valid() bool { return k >= KindSum && k <= KindDistinct }

// String returns the kind's name as used in configuration ("sum", "max",
// "min", "distinct").
func (k Kind) String() string {
	if k.valid() {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// ParseKind is the inverse of Kind.String. Case is ignored because names
// arrive from command lines and HTTP bodies.
func ParseKind(s string) (Kind, error) {
	for k := KindSum; k <= KindDistinct; k++ {
		if strings.EqualFold(s, kindNames[k]) {
			return k, nil
		}
	}
	return 0, fmt.Errorf("%w: %q (valid kinds: sum, max, min, distinct)", ErrUnknownKind, s)
}

// Op is one update. For sum, Delta is added and may be negative. For max and
// min, Delta is the observed value. For distinct, Item is inserted and must be
// non-empty; Delta is ignored.
type Op struct {
	Delta int64
	Item  []byte
}

// State is one shard's (or a tally's) content for a single counter.
type State interface {
	// Kind reports which type of state this is.
	Kind() Kind
	// Apply records one update. On error the state is unchanged.
	Apply(op Op) error
	// Merge folds other into the receiver. other must be of the same kind
	// (ErrKindMismatch otherwise) and is not modified. On error the receiver
	// is unchanged.
	Merge(other State) error
	// Value is the counter's reading: P-N for sum, the extreme for max and
	// min (0 when Empty), the cardinality estimate for distinct.
	Value() int64
	// Empty reports whether the state holds nothing. For sum that means
	// P = N = 0, so applying a zero delta leaves it empty; the definition is
	// chosen so that Empty survives an encode/decode round trip.
	Empty() bool
	// Clone returns a deep copy.
	Clone() State
	// MarshalBinary returns the canonical encoding (see the package doc).
	MarshalBinary() ([]byte, error)
}

// New returns an empty state of kind k.
func New(k Kind) (State, error) {
	switch k {
	case KindSum:
		return &Sum{}, nil
	case KindMax:
		return &Max{}, nil
	case KindMin:
		return &Min{}, nil
	case KindDistinct:
		return NewDistinct(), nil
	}
	return nil, fmt.Errorf("%w: %d", ErrUnknownKind, uint8(k))
}

const (
	formatVersion = 1
	headerLen     = 2
	// maxEncodedLen bounds the largest encoding (a distinct state) so that a
	// hostile row is rejected before any allocation is sized from it.
	maxEncodedLen = headerLen + maxSketchLen
)

func header(k Kind, payloadLen int) []byte {
	b := make([]byte, headerLen, headerLen+payloadLen)
	b[0] = formatVersion
	b[1] = byte(k)
	return b
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// Decode parses an encoding produced by MarshalBinary. The bytes are treated
// as untrusted: every failure is an error wrapping ErrCorrupt (an unknown kind
// byte also wraps ErrUnknownKind), never a panic. The returned state does not
// alias b.
func Decode(b []byte) (State, error) {
	switch {
	case len(b) == 0:
		return nil, corrupt("empty input")
	case len(b) > maxEncodedLen:
		return nil, corrupt("%d bytes exceeds the maximum of %d", len(b), maxEncodedLen)
	case len(b) < headerLen:
		return nil, corrupt("truncated header (%d bytes)", len(b))
	case b[0] != formatVersion:
		return nil, corrupt("unsupported format version %d", b[0])
	}
	payload := b[headerLen:]
	var (
		s   State
		err error
	)
	// Each case assigns through err first so that a failed decoder's typed
	// nil pointer never becomes a non-nil State.
	switch k := Kind(b[1]); k {
	case KindSum:
		var v *Sum
		if v, err = decodeSum(payload); err == nil {
			s = v
		}
	case KindMax, KindMin:
		var e extreme
		if e, err = decodeExtreme(payload, k); err == nil {
			if k == KindMax {
				s = &Max{e}
			} else {
				s = &Min{e}
			}
		}
	case KindDistinct:
		var v *Distinct
		if v, err = decodeDistinct(payload); err == nil {
			s = v
		}
	default:
		err = fmt.Errorf("%w: %w: kind byte %d", ErrCorrupt, ErrUnknownKind, b[1])
	}
	return s, err
}

func mismatch(want Kind, other State) error {
	if other == nil {
		return fmt.Errorf("%w: cannot merge nil into %s", ErrKindMismatch, want)
	}
	return fmt.Errorf("%w: cannot merge %s (%T) into %s", ErrKindMismatch, other.Kind(), other, want)
}
