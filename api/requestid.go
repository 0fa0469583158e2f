package api

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// NewRequestID returns a version 7 UUID (RFC 9562) whose time is t, to the
// millisecond. Request ids of this form fix their event's time, so any
// process that receives a retry computes the same event.
func NewRequestID(t time.Time) string {
	var b [16]byte
	_, _ = rand.Read(b[6:])
	ms := uint64(t.UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	b[6] = 0x70 | b[6]&0x0f
	b[8] = 0x80 | b[8]&0x3f
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

// RequestIDTime returns the time a version 7 UUID carries, and false for any
// other string (another UUID version, another variant, malformed text).
func RequestIDTime(id string) (time.Time, bool) {
	if len(id) != 36 || id[8] != '-' || id[13] != '-' || id[18] != '-' || id[23] != '-' {
		return time.Time{}, false
	}
	var b [16]byte
	for i, seg := range [][2]int{{0, 8}, {9, 13}, {14, 18}, {19, 23}, {24, 36}} {
		off := [...]int{0, 4, 6, 8, 10}[i]
		if _, err := hex.Decode(b[off:], []byte(id[seg[0]:seg[1]])); err != nil {
			return time.Time{}, false
		}
	}
	if b[6]>>4 != 7 || b[8]>>6 != 2 {
		return time.Time{}, false
	}
	var ms int64
	for i := 0; i < 6; i++ {
		ms = ms<<8 | int64(b[i])
	}
	return time.UnixMilli(ms), true
}
