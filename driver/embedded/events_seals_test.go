package embedded

import (
	"bytes"
	"context"
	"errors"
	"math"
	"testing"

	"github.com/abacusdb/abacus/driver"
	"github.com/cockroachdb/pebble/v2"
)

// A seal that lost bytes or gained some is refused, not read as a shorter
// or longer list of events, which would change what a retry learns.
func TestEventSealEncodingStrict(t *testing.T) {
	t.Parallel()
	for _, s := range []driver.EventSeal{
		{Start: 5, End: 9, Value: -3, Events: []byte("events")},
		{Start: math.MinInt64, End: math.MaxInt64, Value: math.MinInt64, Clear: true},
		{Start: -1, End: 1, Events: bytes.Repeat([]byte{0xab}, 300)},
	} {
		b := encodeEventSeal(s)
		got, err := decodeEventSeal(s.Start, b)
		if err != nil || got.Start != s.Start || got.End != s.End || got.Value != s.Value || got.Clear != s.Clear || !bytes.Equal(got.Events, s.Events) {
			t.Fatalf("decodeEventSeal(encodeEventSeal(%+v)) = %+v, %v", s, got, err)
		}
		for n := range len(b) {
			if _, err := decodeEventSeal(s.Start, b[:n]); !errors.Is(err, errCorrupt) {
				t.Errorf("%+v cut to %d of %d bytes: got %v, want errCorrupt", s, n, len(b), err)
			}
		}
		if _, err := decodeEventSeal(s.Start, append(bytes.Clone(b), 0)); !errors.Is(err, errCorrupt) {
			t.Errorf("%+v with a byte more: got %v, want errCorrupt", s, err)
		}
		for _, bad := range []struct {
			at   int
			byte byte
		}{{0, 2}, {0, 0}, {1, 2}, {1, 0x80}} {
			c := bytes.Clone(b)
			c[bad.at] = bad.byte
			if _, err := decodeEventSeal(s.Start, c); !errors.Is(err, errCorrupt) {
				t.Errorf("%+v with byte %d set to %#x: got %v, want errCorrupt", s, bad.at, bad.byte, err)
			}
		}
	}
}

// A corrupt seal fails every call that meets it; SealEvents must not take
// it for an absent seal and write over it.
func TestEventSealCorrupt(t *testing.T) {
	t.Parallel()
	d := openMem(t)
	ctx := context.Background()
	key := eventSealKey("n", "c", 0, 10)
	if err := d.db.Set(key, []byte{sealVersion, 0, 1}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ReadEventSeal(ctx, &driver.ReadEventSealParams{Namespace: "n", Counter: "c", Bucket: 0, Before: 11}); !errors.Is(err, errCorrupt) {
		t.Errorf("ReadEventSeal: got %v, want errCorrupt", err)
	}
	_, applied, err := d.SealEvents(ctx, &driver.SealEventsParams{Namespace: "n", Counter: "c", Bucket: 0, Seal: driver.EventSeal{Start: 10, End: 20}})
	if !errors.Is(err, errCorrupt) || applied {
		t.Errorf("SealEvents over a corrupt seal: applied %v, %v; want errCorrupt", applied, err)
	}
	// A key under the bucket's prefix that is not a seal key.
	if err := d.db.Set(append(eventSealBucketPrefix("n", "c", 1), 1), encodeEventSeal(driver.EventSeal{}), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ReadEventSeal(ctx, &driver.ReadEventSealParams{Namespace: "n", Counter: "c", Bucket: 1, Before: math.MaxInt64}); !errors.Is(err, errBadKey) {
		t.Errorf("ReadEventSeal of a short key: got %v, want errBadKey", err)
	}
}

// The seal SealEvents returns and the one read back own their events:
// neither aliases the caller's slice nor Pebble's buffers.
func TestEventSealOwnsEvents(t *testing.T) {
	t.Parallel()
	d := openMem(t)
	ctx := context.Background()
	events := []byte("abc")
	stored, applied, err := d.SealEvents(ctx, &driver.SealEventsParams{Namespace: "n", Counter: "c", Seal: driver.EventSeal{Start: 1, End: 2, Events: events}})
	if err != nil || !applied {
		t.Fatalf("SealEvents: applied %v, %v", applied, err)
	}
	events[0] = 'x'
	if string(stored.Events) != "abc" {
		t.Errorf("the returned seal's events changed with the caller's slice: %q", stored.Events)
	}
	read, err := d.ReadEventSeal(ctx, &driver.ReadEventSealParams{Namespace: "n", Counter: "c", Before: 2})
	if err != nil || string(read.Events) != "abc" {
		t.Fatalf("ReadEventSeal = %+v, %v; want events abc", read, err)
	}
}
