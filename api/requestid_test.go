package api

import (
	"strings"
	"testing"
	"time"
)

func TestNewIDCarriesItsTime(t *testing.T) {
	t.Parallel()
	for _, at := range []time.Time{
		time.UnixMilli(0),
		time.Date(2026, 11, 22, 9, 30, 1, 123_000_000, time.UTC),
		time.UnixMilli(1<<48 - 1), // the largest 48-bit millisecond count
	} {
		id := NewRequestID(at)
		got, ok := RequestIDTime(id)
		if !ok {
			t.Fatalf("RequestIDTime(%q) not ok", id)
		}
		if !got.Equal(at.Truncate(time.Millisecond)) {
			t.Fatalf("RequestIDTime(NewRequestID(%v)) = %v", at, got)
		}
		if id[14] != '7' || !strings.ContainsRune("89ab", rune(id[19])) {
			t.Fatalf("%q: version or variant nibble wrong", id)
		}
	}
}

func TestNewIDIsUniqueAndOrdered(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	at := time.Unix(1_800_000_000, 0)
	prev := ""
	for i := range 1000 {
		id := NewRequestID(at.Add(time.Duration(i) * time.Millisecond))
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
		if id <= prev {
			t.Fatalf("ids of later times must sort later: %q after %q", id, prev)
		}
		prev = id
	}
}

func TestIDTimeRefusesOtherStrings(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"",
		"retry-42",
		"0190c8e4-5a2b-4c3d-8e4f-123456789abc",  // version 4
		"0190c8e4-5a2b-7c3d-ce4f-123456789abc",  // variant 110
		"0190c8e4-5a2b-7c3d-8e4f-123456789ab",   // short
		"0190c8e4x5a2b-7c3d-8e4f-123456789abc",  // no dash
		"0190c8e4-5a2b-7c3d-8e4f-123456789abg",  // not hex
		"0190c8e4-5a2b-7c3d-8e4f-123456789abcd", // long
	} {
		if _, ok := RequestIDTime(s); ok {
			t.Errorf("RequestIDTime(%q) ok, want refused", s)
		}
	}
	if at, ok := RequestIDTime("0190C8E4-5A2B-7C3D-8E4F-123456789ABC"); !ok || at.UnixMilli() != 0x0190c8e45a2b {
		t.Errorf("upper-case v7: got %v %v", at, ok)
	}
}

// FuzzIDTime feeds request ids from HTTP bodies: RequestIDTime must never panic,
// and whatever it accepts must be a well-formed v7 UUID.
func FuzzIDTime(f *testing.F) {
	f.Add("0190c8e4-5a2b-7c3d-8e4f-123456789abc")
	f.Add("not-a-uuid")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		at, ok := RequestIDTime(s)
		if !ok {
			return
		}
		if len(s) != 36 || (s[14] != '7') {
			t.Fatalf("accepted %q", s)
		}
		if at.UnixMilli() < 0 || at.UnixMilli() >= 1<<48 {
			t.Fatalf("time %v out of the 48-bit range", at)
		}
	})
}
