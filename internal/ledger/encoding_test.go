package ledger

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

func sampleActors() []*Actor {
	return []*Actor{
		{},
		{P: Section{History: entries("req1", 50, "req2", 10, "req3", 100)}},
		{P: Section{Total: 50, Folded: 1, History: entries("req2", 10)}, N: Section{Total: 7, Folded: 3, History: entries("d", 1)}},
		{N: Section{History: entries(strings.Repeat("é", MaxRequestIDLen/2), math.MaxInt64)}},
		{P: Section{Total: math.MaxInt64, Folded: 1 << 40}},
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	for _, a := range sampleActors() {
		b := EncodeActor(a)
		got, err := DecodeActor(b)
		if err != nil {
			t.Fatalf("DecodeActor(EncodeActor(%+v)): %v", *a, err)
		}
		if !got.Equal(a) {
			t.Fatalf("round trip: got %+v, want %+v", *got, *a)
		}
		if again := EncodeActor(got); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs: %x vs %x", again, b)
		}
	}
}

// The layout is part of the stored format; this pins it.
func TestEncodingLayout(t *testing.T) {
	t.Parallel()
	a := &Actor{P: Section{Total: 300, Folded: 2, History: entries("ab", 5)}}
	want := []byte{1, 0xac, 0x02, 2, 1, 2, 'a', 'b', 5, 0, 0, 0}
	if got := EncodeActor(a); !bytes.Equal(got, want) {
		t.Fatalf("EncodeActor = %x, want %x", got, want)
	}
}

func TestDecodeRefusesMalformedRows(t *testing.T) {
	t.Parallel()
	cases := map[string][]byte{
		"empty":                 nil,
		"unknown version":       {2, 0, 0, 0, 0, 0, 0},
		"truncated":             {1, 0, 0},
		"trailing byte":         {1, 0, 0, 0, 0, 0, 0, 0},
		"non-minimal varint":    {1, 0x80, 0x00, 0, 0, 0, 0, 0},
		"total without folding": {1, 5, 0, 0, 0, 0, 0},
		"folding without total": {1, 0, 1, 0, 0, 0, 0},
		"total below folded":    {1, 2, 3, 0, 0, 0, 0},
		"count overruns":        {1, 0, 0, 5, 1, 'a', 1, 0, 0, 0},
		"id overruns":           {1, 0, 0, 1, 9, 'a', 1, 0, 0, 0},
		"zero amount":           {1, 0, 0, 1, 1, 'a', 0, 0, 0, 0},
		"empty id":              {1, 0, 0, 1, 0, 1, 1, 0, 0, 0},
		"bad UTF-8 id":          {1, 0, 0, 1, 1, 0xff, 1, 0, 0, 0},
		"total over int64":      {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 1, 0, 0, 0, 0},
		"sum over int64": append(append([]byte{1, 0, 0, 2, 1, 'a'}, maxVarint()...),
			append([]byte{1, 'b'}, maxVarint()...)...),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if a, err := DecodeActor(b); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("DecodeActor(%x) = %+v, %v; want ErrCorrupt", b, a, err)
			}
		})
	}
}

func maxVarint() []byte {
	b := []byte{}
	v := uint64(math.MaxInt64)
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}
