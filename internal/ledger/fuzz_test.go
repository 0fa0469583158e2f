package ledger

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecodeActor feeds DecodeActor arbitrary bytes, standing in for a
// damaged or hostile database row. Whatever it accepts must be a
// well-formed state (sums fit, ids valid), encode back to the very same
// bytes, and survive a join with itself.
func FuzzDecodeActor(f *testing.F) {
	for _, a := range sampleActors() {
		b := EncodeActor(a)
		f.Add(b)
		f.Add(b[:len(b)-1])
		f.Add(append(bytes.Clone(b), 0))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeActor(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if again := EncodeActor(a); !bytes.Equal(again, b) {
			t.Fatalf("accepted %x but it re-encodes as %x", b, again)
		}
		for _, s := range []*Section{&a.P, &a.N} {
			if _, ok := s.Sum(); !ok {
				t.Fatalf("accepted a section whose sum overflows: %+v", *s)
			}
			for _, e := range s.History {
				if ValidateRequestID(e.RequestID) != nil || e.Amount <= 0 {
					t.Fatalf("accepted a bad entry %+v", e)
				}
			}
		}
		j, err := Join(a, a.Clone())
		if err != nil || !j.Equal(a) {
			t.Fatalf("join with itself: %+v, %v", j, err)
		}
		st := NewState()
		st.Set("x", a)
		if _, err := st.Value(); err != nil {
			t.Fatalf("Value of an accepted row: %v", err)
		}
	})
}
