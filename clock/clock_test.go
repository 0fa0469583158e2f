package clock

import (
	"testing"
	"time"
)

func TestManual(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := NewManual(start)
	if got := m.Now(); !got.Equal(start) {
		t.Fatalf("Now = %v, want %v", got, start)
	}
	m.Advance(90 * time.Minute)
	if got, want := m.Now(), start.Add(90*time.Minute); !got.Equal(want) {
		t.Fatalf("after Advance: %v, want %v", got, want)
	}
	m.Set(start)
	off := Offset{Base: m, By: -time.Minute}
	if got, want := off.Now(), start.Add(-time.Minute); !got.Equal(want) {
		t.Fatalf("Offset.Now = %v, want %v", got, want)
	}
}
