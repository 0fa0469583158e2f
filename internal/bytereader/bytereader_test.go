package bytereader

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

var errCorrupt = errors.New("corrupt")

// Uvarint takes exactly the encodings binary.AppendUvarint makes: the one
// shortest encoding of each value, and nothing longer.
func FuzzUvarint(f *testing.F) {
	for _, seed := range [][]byte{{0}, {1}, {0x7f}, {0x80, 0x01}, {0x80, 0x00}, {0x81, 0x80, 0x00}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, {}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := &Reader{B: b, Corrupt: errCorrupt}
		got := r.Uvarint("x")
		v, n := binary.Uvarint(b)
		valid := n > 0 && n == len(binary.AppendUvarint(nil, v))
		switch {
		case valid && (r.Err != nil || got != v || len(r.B) != len(b)-n):
			t.Fatalf("%x: Uvarint = %d, %v, %d bytes left; want %d, %d left", b, got, r.Err, len(r.B), v, len(b)-n)
		case !valid && (r.Err == nil || !errors.Is(r.Err, errCorrupt) || len(r.B) != len(b)):
			t.Fatalf("%x: Uvarint = %d, %v, %d bytes left; want a corrupt error, nothing read", b, got, r.Err, len(r.B))
		}
	})
}

func TestStringNamesWhatFailed(t *testing.T) {
	for _, tc := range []struct {
		b        []byte
		want     string
		wantFail string
	}{
		{[]byte{3, 'a', 'b', 'c', 9}, "abc", ""},
		{[]byte{0}, "", ""},
		{[]byte{4, 'a'}, "", "name of 4 bytes overruns the record"},
		{[]byte{0x80, 0x00}, "", "non-minimal varint in name length"},
		{[]byte{0x80}, "", "bad varint in name length"},
	} {
		r := &Reader{B: tc.b, Corrupt: errCorrupt}
		got := r.String("name")
		switch {
		case tc.wantFail == "" && (r.Err != nil || got != tc.want):
			t.Errorf("%x: %q, %v; want %q", tc.b, got, r.Err, tc.want)
		case tc.wantFail != "" && (r.Err == nil || !strings.Contains(r.Err.Error(), tc.wantFail) || !errors.Is(r.Err, errCorrupt)):
			t.Errorf("%x: %q, %v; want an error saying %q", tc.b, got, r.Err, tc.wantFail)
		}
	}
}
