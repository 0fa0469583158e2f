package crdt

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/axiomhq/hyperloglog"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Rows written by one release must be readable by the next, so the exact
// bytes are pinned here rather than only round-tripped.
func TestEncodingLayout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		s    State
		want string
	}{
		{"sum empty", &Sum{}, "01 01 0000000000000000 0000000000000000"},
		{"sum", &Sum{p: 5, n: 2}, "01 01 0000000000000005 0000000000000002"},
		{"sum min", &Sum{n: 1 << 63}, "01 01 0000000000000000 8000000000000000"},
		{"max empty", &Max{}, "01 02 00 0000000000000000"},
		{"max", &Max{extreme{set: true, v: -2}}, "01 02 01 fffffffffffffffe"},
		{"min", &Min{extreme{set: true, v: math.MaxInt64}}, "01 03 01 7fffffffffffffff"},
		{"distinct empty", NewDistinct(), "01 04 020e0001 00000000 00000000 00000000 00000000"},
	} {
		if got := mustEncode(t, tc.s); !bytes.Equal(got, unhex(t, tc.want)) {
			t.Errorf("%s: encoded % x, want %s", tc.name, got, tc.want)
		}
	}
}

// A spread of states per kind, including the int64 edges and both sketch
// representations.
func sampleStates(t testing.TB) []State {
	sparse := NewDistinct()
	for i := range 500 {
		mustApply(t, sparse, Op{Item: item(i)})
	}
	dense := NewDistinct()
	for i := range 50_000 {
		mustApply(t, dense, Op{Item: item(i)})
	}
	return []State{
		&Sum{},
		mustApply(t, &Sum{}, Op{Delta: 42}),
		mustApply(t, &Sum{}, Op{Delta: 5}, Op{Delta: -5}),
		mustApply(t, &Sum{}, Op{Delta: math.MaxInt64}),
		mustApply(t, &Sum{}, Op{Delta: math.MinInt64}),
		&Sum{p: math.MaxUint64, n: math.MaxUint64},
		&Max{},
		mustApply(t, &Max{}, Op{Delta: math.MinInt64}),
		mustApply(t, &Max{}, Op{Delta: 0}),
		mustApply(t, &Max{}, Op{Delta: math.MaxInt64}),
		&Min{},
		mustApply(t, &Min{}, Op{Delta: math.MaxInt64}),
		mustApply(t, &Min{}, Op{Delta: -17}),
		NewDistinct(),
		mustApply(t, NewDistinct(), Op{Item: []byte("one")}),
		sparse,
		dense,
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range sampleStates(t) {
		enc := mustEncode(t, s)
		got := mustDecode(t, enc)
		requireSame(t, "decoded vs original", got, s)
		if re := mustEncode(t, got); !bytes.Equal(re, enc) {
			t.Errorf("%v: re-encoding differs", s.Kind())
		}
		// The decoded state must not alias the input and must stay usable.
		clear(enc)
		requireSame(t, "decoded after clearing its input", got, s)
		requireSame(t, "decoded merged with empty", mustMerge(t, got, mustNew(t, s.Kind())), s)
	}
}

// Encodings are a function of content, not of the order items arrived in,
// how merges were grouped, or whether the state was decoded in between.
func TestEncodingIsDeterministic(t *testing.T) {
	t.Parallel()
	skipHeavyInShort(t)
	for _, n := range []int{3, 200, 1_000, 9_000, 30_000} {
		fwd, rev, decoded := NewDistinct(), NewDistinct(), State(NewDistinct())
		for i := range n {
			// Plain calls: t.Helper in a 30,000-step loop dominates under -race.
			err := errors.Join(fwd.Apply(Op{Item: item(i)}), rev.Apply(Op{Item: item(n - 1 - i)}), decoded.Apply(Op{Item: item(i)}))
			if err != nil {
				t.Fatal(err)
			}
			if i%97 == 0 {
				decoded = mustDecode(t, mustEncode(t, decoded))
			}
		}
		requireSame(t, "forward vs reverse insertion", fwd, rev)
		requireSame(t, "with intermediate decodes", fwd, decoded)
		requireSame(t, "same inputs twice", fwd, mustApply(t, rev.Clone(), Op{Item: item(0)}))
	}
}

// Sketches written by the library itself keep recent insertions in a
// hash-ordered buffer. They are valid input, and decoding must canonicalize
// them so that every reader computes the same value and the same re-encoding.
func TestDecodeNonCanonicalSketch(t *testing.T) {
	t.Parallel()
	raw := hyperloglog.New14()
	ours := NewDistinct()
	for i := range 100 {
		raw.Insert(item(i))
		mustApply(t, ours, Op{Item: item(i)})
	}
	b, err := raw.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if binary.BigEndian.Uint32(b[4:8]) == 0 {
		t.Fatal("test setup: expected the library to leave insertions buffered")
	}
	got := mustDecode(t, append([]byte{formatVersion, byte(KindDistinct)}, b...))
	requireSame(t, "library-written sketch vs ours", got, ours)
}

func TestDecodeMalformed(t *testing.T) {
	t.Parallel()
	enc := func(s State) []byte { return mustEncode(t, s) }
	with := func(b []byte, i int, v byte) []byte { b = bytes.Clone(b); b[i] = v; return b }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	u32 := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

	sum := enc(mustApply(t, &Sum{}, Op{Delta: 9}))
	mx := enc(mustApply(t, &Max{}, Op{Delta: 9}))
	mn := enc(mustApply(t, &Min{}, Op{Delta: 9}))
	sparse := enc(mustApply(t, NewDistinct(), Op{Item: []byte("a")}, Op{Item: []byte("b")}))
	denseState := NewDistinct()
	for i := range 20_000 {
		mustApply(t, denseState, Op{Item: item(i)})
	}
	dense := enc(denseState)
	if dense[5] != 0 || len(dense) != headerLen+sketchDenseLen {
		t.Fatal("test setup: expected a dense sketch")
	}
	// hdr is a distinct state's prefix up to and including the sketch
	// header, for hand-built sparse sketches.
	hdr := func(bufferedKeys uint32) []byte {
		return cat([]byte{formatVersion, byte(KindDistinct), sketchVersion, sketchPrecision, 0, 1}, u32(bufferedKeys))
	}
	list := func(count, last uint32, stream ...byte) []byte {
		return cat(u32(count), u32(last), u32(uint32(len(stream))), stream)
	}

	for _, tc := range []struct {
		name    string
		in      []byte
		unknown bool // also ErrUnknownKind
	}{
		{name: "nil", in: nil},
		{name: "empty", in: []byte{}},
		{name: "version only", in: []byte{formatVersion}},
		{name: "version 0", in: with(sum, 0, 0)},
		{name: "version 2", in: with(sum, 0, 2)},
		{name: "kind 0", in: with(sum, 1, 0), unknown: true},
		{name: "kind 5", in: with(sum, 1, 5), unknown: true},
		{name: "kind 255", in: []byte{formatVersion, 255}, unknown: true},
		{name: "sum header only", in: sum[:2]},
		{name: "sum truncated", in: sum[:len(sum)-1]},
		{name: "sum trailing", in: cat(sum, []byte{0})},
		{name: "sum above max", in: cat(sum[:2], u32(0x80000000), u32(0), u32(0), u32(0))},
		{name: "sum below min", in: cat(sum[:2], u32(0), u32(0), u32(0x80000000), u32(1))},
		{name: "sum P max N zero", in: cat(sum[:2], u32(math.MaxUint32), u32(math.MaxUint32), u32(0), u32(0))},
		{name: "max truncated", in: mx[:len(mx)-1]},
		{name: "max trailing", in: cat(mx, []byte{0})},
		{name: "max flag 2", in: with(mx, 2, 2)},
		{name: "max flag ff", in: with(mx, 2, 0xff)},
		{name: "max unset with value", in: with(mx, 2, 0)},
		{name: "min truncated", in: mn[:len(mn)-1]},
		{name: "min trailing", in: cat(mn, []byte{0})},
		{name: "min flag 2", in: with(mn, 2, 2)},
		{name: "min payload missing", in: mn[:2]},
		{name: "distinct payload missing", in: sparse[:2]},
		{name: "distinct header truncated", in: sparse[:9]},
		{name: "sketch version 1", in: with(sparse, 2, 1)},
		{name: "sketch version 3", in: with(sparse, 2, 3)},
		{name: "sketch precision 16", in: with(sparse, 3, 16)},
		{name: "sketch precision 4", in: with(sparse, 3, 4)},
		{name: "sketch precision 0", in: with(sparse, 3, 0)},
		{name: "sketch bias", in: with(sparse, 4, 1)},
		{name: "sketch representation 2", in: with(sparse, 5, 2)},
		{name: "sparse truncated", in: sparse[:len(sparse)-1]},
		{name: "sparse trailing", in: cat(sparse, []byte{0})},
		{name: "sparse list header truncated", in: cat(hdr(0), u32(0), u32(0))},
		{name: "sparse buffered keys missing", in: cat(hdr(3), u32(2), list(0, 0))},
		{name: "sparse huge buffered count", in: cat(hdr(math.MaxUint32), list(0, 0))},
		{name: "sparse list size too large", in: cat(hdr(0), u32(1), u32(2), u32(5), []byte{2})},
		{name: "sparse list count mismatch", in: cat(hdr(0), list(2, 2, 2))},
		{name: "sparse list last mismatch", in: cat(hdr(0), list(1, 3, 2))},
		{name: "sparse list unterminated varint", in: cat(hdr(0), list(1, 2, 0x82))},
		{name: "sparse list not increasing", in: cat(hdr(0), list(2, 2, 2, 0))},
		{name: "sparse empty list with last", in: cat(hdr(0), list(0, 7))},
		{name: "sparse invalid key", in: cat(hdr(1), u32(0xffffffff), list(0, 0))},
		{name: "dense truncated", in: dense[:len(dense)-1]},
		{name: "dense trailing", in: cat(dense, []byte{0})},
		{name: "dense count wrong", in: with(dense, 8, 0x41)},
		{name: "dense register too big", in: with(dense, len(dense)-1, 60)},
		{name: "oversized", in: cat(hdr(0), list(0, 0), make([]byte, maxEncodedLen))},
		{name: "oversized by one", in: cat(dense, make([]byte, maxEncodedLen-len(dense)+1))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Decode(tc.in)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Decode = %v, %v; want ErrCorrupt", s, err)
			}
			if tc.unknown != errors.Is(err, ErrUnknownKind) {
				t.Fatalf("Decode error %v: ErrUnknownKind = %v, want %v", err, !tc.unknown, tc.unknown)
			}
		})
	}
}

// The sketch library is the one decoder we do not control; guard must turn a
// panic inside it into an ordinary error.
func TestGuardRecoversPanic(t *testing.T) {
	t.Parallel()
	if err := guard(func() error { panic("index out of range") }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("guard(panic) = %v, want ErrCorrupt", err)
	}
	lib := errors.New("library says no")
	if err := guard(func() error { return lib }); !errors.Is(err, ErrCorrupt) || !errors.Is(err, lib) {
		t.Fatalf("guard(error) = %v, want ErrCorrupt wrapping the library error", err)
	}
	if err := guard(func() error { return nil }); err != nil {
		t.Fatalf("guard(nil) = %v", err)
	}
}
