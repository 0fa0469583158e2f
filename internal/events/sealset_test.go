package events

import (
	"bytes"
	"slices"
	"testing"

	"github.com/abacusdb/abacus/driver"
)

func TestSealSetRoundTrip(t *testing.T) {
	t.Parallel()
	evs := []driver.Event{
		{Time: 101, ID: "0193f1c2-7a00-7000-8000-000000000001"},
		{Time: 101, ID: "0193f1c2-7a00-7000-8000-000000000002"},
		{Time: 150, ID: "order-17"},
		{Time: 150, ID: "0193F1C2-7A00-7000-8000-000000000003"}, // upper case: stored as it is
		{Time: 1 << 50, ID: ""},
	}
	slices.SortFunc(evs, func(a, b driver.Event) int {
		return compareSealed(sealedEvent{a.Time, a.ID}, sealedEvent{b.Time, b.ID})
	})
	b := encodeSealSet(100, evs)
	got, err := decodeSealSet(100, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(evs) {
		t.Fatalf("%d events back, want %d", len(got), len(evs))
	}
	for i, ev := range evs {
		if got[i] != (sealedEvent{ev.Time, ev.ID}) {
			t.Fatalf("event %d: %+v, want %+v", i, got[i], ev)
		}
		ok, err := sealHolds(&driver.EventSeal{Start: 100, Events: b}, ev.Time, ev.ID)
		if err != nil || !ok {
			t.Fatalf("sealHolds(%+v) = %v, %v", ev, ok, err)
		}
	}
	for _, miss := range []sealedEvent{{101, "order-17"}, {149, "order-17"}, {150, "0193f1c2-7a00-7000-8000-000000000003"}} {
		if ok, _ := sealHolds(&driver.EventSeal{Start: 100, Events: b}, miss.Time, miss.ID); ok {
			t.Fatalf("sealHolds(%+v) = true", miss)
		}
	}
	if ok, _ := sealHolds(&driver.EventSeal{Start: 100, Events: b, Clear: true}, 101, evs[0].ID); ok {
		t.Fatal("a clear counts nothing")
	}
}

func FuzzDecodeSealSet(f *testing.F) {
	f.Add(int64(0), encodeSealSet(0, nil))
	f.Add(int64(5), encodeSealSet(5, []driver.Event{{Time: 6, ID: "0193f1c2-7a00-7000-8000-000000000001"}, {Time: 9, ID: "x"}}))
	f.Add(int64(-9), []byte{1, 2, 0, 0, 1, 0})
	f.Fuzz(func(t *testing.T, start int64, b []byte) {
		set, err := decodeSealSet(start, b)
		if err != nil {
			return
		}
		evs := make([]driver.Event, len(set))
		for i, s := range set {
			evs[i] = driver.Event{Time: s.Time, ID: s.ID}
		}
		if again := encodeSealSet(start, evs); !bytes.Equal(again, b) {
			t.Fatalf("decode then encode changed the bytes:\n%x\n%x", b, again)
		}
	})
}
