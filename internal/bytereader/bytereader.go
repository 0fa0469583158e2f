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

// take consumes the next n bytes, or fails with the message (naming what)
// and returns nil when fewer are left or an error has stuck.
func (r *Reader) take(n int, format, what string) []byte {
	if r.Err != nil {
		return nil
	}
	if len(r.B) < n {
		r.Fail(format, what)
		return nil
	}
	b := r.B[:n]
	r.B = r.B[n:]
	return b
}

// Byte reads one byte.
func (r *Reader) Byte(what string) byte {
	b := r.take(1, "truncated before %s", what)
	if b == nil {
		return 0
	}
	return b[0]
}

// Uint64 reads a big-endian uint64.
func (r *Reader) Uint64(what string) uint64 {
	b := r.take(8, "truncated in %s", what)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

// Uint32 reads a big-endian uint32.
func (r *Reader) Uint32(what string) uint32 {
	b := r.take(4, "truncated in %s", what)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint32(b)
}

// Uvarint reads a uvarint and refuses a non-minimal one: every value has
// one encoding, so equal records are equal bytes.
func (r *Reader) Uvarint(what string) uint64 {
	return r.uvarint(what, "")
}

// uvarint is Uvarint, naming what+suffix on failure: the two are joined
// only then, because a decoder runs this for every field of every record
// it reads (joining them up front was a twentieth of a queue consumer's
// processor time).
func (r *Reader) uvarint(what, suffix string) uint64 {
	if r.Err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.B)
	if n <= 0 {
		r.Fail("bad varint in %s%s", what, suffix)
		return 0
	}
	// The shortest encoding never ends in a zero byte, except the one
	// byte of 0 itself; a longer one always does (its top group is 0).
	if n > 1 && r.B[n-1] == 0 {
		r.Fail("non-minimal varint in %s%s", what, suffix)
		return 0
	}
	r.B = r.B[n:]
	return v
}

// String reads a uvarint length and that many bytes.
func (r *Reader) String(what string) string {
	n := r.uvarint(what, " length")
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
