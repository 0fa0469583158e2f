package api

import (
	"strings"
	"testing"
)

// Whatever ParseUUID accepts is exactly the canonical form FormatUUID
// writes (up to the case of the hex), so a parsed id prints back as sent.
func FuzzParseUUID(f *testing.F) {
	for _, s := range []string{
		"0190c8e4-5a2b-7c3d-8e4f-123456789abc",
		"0190C8E4-5A2B-7C3D-8E4F-123456789ABC",
		"0190c8e45a2b7c3d8e4f123456789abc",
		"0190c8e4-5a2b-7c3d-8e4f-123456789abg",
		"0190c8e4+5a2b-7c3d-8e4f-123456789abc",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, ok := ParseUUID(s)
		if !ok {
			if b != ([16]byte{}) {
				t.Fatalf("refused %q but returned %x", s, b)
			}
			return
		}
		if got := FormatUUID(b); got != strings.ToLower(s) {
			t.Fatalf("ParseUUID(%q) prints back as %q", s, got)
		}
	})
}
