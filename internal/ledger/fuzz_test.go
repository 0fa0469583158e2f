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

// FuzzDecodeBase feeds DecodeBase arbitrary bytes, standing in for a
// damaged or hostile base row. Whatever it accepts must re-encode to the
// very same bytes, with totals that fit and a cut that bounds reads.
func FuzzDecodeBase(f *testing.F) {
	for _, b := range []Base{
		{Version: 1, Cut: "0069a1b2c3", P: 10, N: 3},
		{Version: 1 << 40, Cut: "0069a1b2c3.host-1", P: 1<<63 - 1, N: 1<<63 - 1},
	} {
		raw := EncodeBase(b)
		f.Add(raw)
		f.Add(raw[:len(raw)-1])
		f.Add(append(bytes.Clone(raw), 0))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		b, err := DecodeBase(raw)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if again := EncodeBase(b); !bytes.Equal(again, raw) {
			t.Fatalf("accepted %x but it re-encodes as %x", raw, again)
		}
		if b.Version == 0 || b.Cut == "" || len(b.Cut) > maxCutLen || b.P < 0 || b.N < 0 {
			t.Fatalf("accepted a malformed base %v", b)
		}
		st := &State{actors: map[string]*Actor{}, base: b}
		if _, err := st.Value(); err != nil {
			t.Fatalf("Value of an accepted base: %v", err)
		}
	})
}
