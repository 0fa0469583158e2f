// Package bytereader decodes the stores' binary records: big-endian
// integers, minimal uvarints and length-prefixed strings, read from a byte
// slice. The first error sticks, so a decoder reads a whole record and
// checks once; a length is checked against what is left before anything is
// allocated, so a corrupt record cannot ask for gigabytes.
package bytereader

import (
	"encoding/binary"
	"fmt"
)

// Reader consumes B. Corrupt is the sentinel every error wraps (each
// store has its own).
type Reader struct {
	B       []byte
	Err     error
	Corrupt error
}

// Fail records the first error.
func (r *Reader) Fail(format string, args ...any) {
	if r.Err == nil {
		r.Err = fmt.Errorf("%w: "+format, append([]any{r.Corrupt}, args...)...)
	}
}

// Byte reads one byte.
func (r *Reader) Byte(what string) byte {
	if r.Err != nil {
		return 0
	}
	if len(r.B) < 1 {
		r.Fail("truncated before %s", what)
		return 0
	}
	v := r.B[0]
	r.B = r.B[1:]
	return v
}

// Uint64 reads a big-endian uint64.
func (r *Reader) Uint64(what string) uint64 {
	if r.Err != nil {
		return 0
	}
	if len(r.B) < 8 {
		r.Fail("truncated in %s", what)
		return 0
	}
	v := binary.BigEndian.Uint64(r.B)
	r.B = r.B[8:]
	return v
}

// Uint32 reads a big-endian uint32.
func (r *Reader) Uint32(what string) uint32 {
	if r.Err != nil {
		return 0
	}
	if len(r.B) < 4 {
		r.Fail("truncated in %s", what)
		return 0
	}
	v := binary.BigEndian.Uint32(r.B)
	r.B = r.B[4:]
	return v
}

// Uvarint reads a uvarint and refuses a non-minimal one: every value has
// one encoding, so equal records are equal bytes.
func (r *Reader) Uvarint(what string) uint64 {
	if r.Err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.B)
	if n <= 0 {
		r.Fail("bad varint in %s", what)
		return 0
	}
	if n != len(binary.AppendUvarint(nil, v)) {
		r.Fail("non-minimal varint in %s", what)
		return 0
	}
	r.B = r.B[n:]
	return v
}

// String reads a uvarint length and that many bytes.
func (r *Reader) String(what string) string {
	n := r.Uvarint(what + " length")
	if r.Err != nil {
		return ""
	}
	if n > uint64(len(r.B)) {
		r.Fail("%s of %d bytes overruns the record", what, n)
		return ""
	}
	s := string(r.B[:n])
	r.B = r.B[n:]
	return s
}
