package api

import (
	"crypto/rand"
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
	return FormatUUID(b)
}

// RequestIDTime returns the time a version 7 UUID carries, and false for any
// other string (another UUID version, another variant, malformed text).
func RequestIDTime(id string) (time.Time, bool) {
	b, ok := ParseUUID(id)
	if !ok {
		return time.Time{}, false
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
