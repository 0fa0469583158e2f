package api

import "encoding/hex"

// FormatUUID returns b in the canonical 8-4-4-4-12 lower-case hex form:
// how request ids and message ids travel.
func FormatUUID(b [16]byte) string {
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], b[10:16])
	return string(s[:])
}

// ParseUUID reads a UUID in the canonical 8-4-4-4-12 form, in either case
// of hex; ok is false for any other text. It checks no version or variant:
// that is for the caller, which knows which kind of id it expects.
func ParseUUID(s string) (b [16]byte, ok bool) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return b, false
	}
	for _, g := range [...]struct{ from, to, at int }{{0, 8, 0}, {9, 13, 4}, {14, 18, 6}, {19, 23, 8}, {24, 36, 10}} {
		if _, err := hex.Decode(b[g.at:], []byte(s[g.from:g.to])); err != nil {
			return [16]byte{}, false
		}
	}
	return b, true
}
