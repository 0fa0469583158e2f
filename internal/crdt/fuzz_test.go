package crdt

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecode feeds Decode arbitrary bytes, standing in for corrupted or
// hostile database rows. Besides "never panic", it checks that whatever is
// accepted is stable: encoding it is canonical (a second decode/encode pass
// changes nothing) and, for the fixed-size kinds, that accepted input was
// already canonical.
func FuzzDecode(f *testing.F) {
	seeds := []State{}
	for _, n := range []int{1, 5, 20} {
		d := NewDistinct()
		for i := range n {
			mustApply(f, d, Op{Item: item(i)})
		}
		seeds = append(seeds, d)
	}
	for _, s := range append(seeds, sampleStates(f)...) {
		b := mustEncode(f, s)
		// The fuzzer's minimizer is quadratic in input length, so kilobyte
		// seeds (large sparse and all dense sketches) stall it for minutes.
		// TestRoundTrip and TestDecodeMalformed cover those layouts instead.
		if len(b) > 256 {
			continue
		}
		f.Add(b)
		f.Add(b[:len(b)-1])
		f.Add(append(bytes.Clone(b), 0))
	}
	for _, b := range [][]byte{
		nil,
		{formatVersion},
		{formatVersion, 0},
		{formatVersion, 9, 1, 2, 3},
		{2, byte(KindSum), 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0},
		{formatVersion, byte(KindMax), 2, 0, 0, 0, 0, 0, 0, 0, 0},
		{formatVersion, byte(KindDistinct), 2, 14, 0, 1, 0, 0, 0, 1, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		{formatVersion, byte(KindDistinct), 2, 14, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 1, 4},
	} {
		f.Add(b)
	}

	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := Decode(in)
		if err != nil {
			if s != nil {
				t.Fatalf("Decode returned a state and error %v", err)
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Decode error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		enc, err := s.MarshalBinary()
		if err != nil {
			t.Fatalf("re-encoding an accepted %v: %v", s.Kind(), err)
		}
		again, err := Decode(enc)
		if err != nil {
			t.Fatalf("decoding our own encoding of %v: %v", s.Kind(), err)
		}
		if again.Kind() != s.Kind() || again.Value() != s.Value() || again.Empty() != s.Empty() {
			t.Fatalf("round trip changed %v value %d empty %v into %v value %d empty %v",
				s.Kind(), s.Value(), s.Empty(), again.Kind(), again.Value(), again.Empty())
		}
		if enc2 := mustEncode(t, again); !bytes.Equal(enc, enc2) {
			t.Fatalf("%v encoding is not canonical: %d bytes then %d", s.Kind(), len(enc), len(enc2))
		}
		if s.Kind() != KindDistinct && !bytes.Equal(in, enc) {
			t.Fatalf("%v accepted non-canonical input % x (canonical % x)", s.Kind(), in, enc)
		}
		// Accepted states must be fit for use, not merely decodable.
		if err := again.Merge(s); err != nil && !errors.Is(err, ErrOverflow) {
			t.Fatalf("merging decoded %v states: %v", s.Kind(), err)
		}
	})
}
