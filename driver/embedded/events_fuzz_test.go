package embedded

import (
	"bytes"
	"math"
	"testing"

	"github.com/abacusdb/abacus/driver"
)

// Keys and cells of the events tables come from disk like every other
// stored byte: the decoders must never panic, and what they accept must
// re-encode to the same bytes.

func FuzzDecodeEventKey(f *testing.F) {
	f.Add(eventKey("ns", "counter", 1_700_000_040_000_000, 1_700_000_040_000_123, "req-1"))
	f.Add(eventKey("", "", math.MinInt64, math.MaxInt64, ""))
	f.Add(eventBucketPrefix("a", "bc", -60))
	f.Add(rollupKey("ns", "counter"))
	f.Add(markerKey("ns", "counter", 60_000_000))
	f.Add(eventSealKey("ns", "counter", 1_700_000_040_000_000, 1_700_000_040_000_123))
	f.Add(eventSealKey("a", "bc", -60, math.MinInt64))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := decodeEventKey(b)
		if err != nil {
			return
		}
		if got := encodeEventKey(k); !bytes.Equal(got, b) {
			t.Fatalf("decodeEventKey(%x) = %+v, which re-encodes as %x", b, k, got)
		}
		if k.Kind == kindEvent {
			// ReadEvents decodes only what follows the bucket prefix.
			got, err := eventKeyAfter(b, len(eventBucketPrefix(k.Namespace, k.Counter, k.Bucket)))
			if err != nil || got.Time != k.Time || got.ID != k.ID {
				t.Fatalf("eventKeyAfter(%x) = %+v, %v; want time %d id %q", b, got, err, k.Time, k.ID)
			}
		}
		if k.Kind == kindSeal {
			// ReadEventSeal decodes only what follows the bucket prefix.
			got, err := sealStartAfter(b, len(eventSealBucketPrefix(k.Namespace, k.Counter, k.Bucket)))
			if err != nil || got != k.Start {
				t.Fatalf("sealStartAfter(%x) = %d, %v; want %d", b, got, err, k.Start)
			}
		}
	})
}

func FuzzDecodeEventValue(f *testing.F) {
	ev := eventKey("n", "c", 0, 5, "r")
	f.Add(ev, encodeEventValue(kindEvent, eventValue{Timestamp: 5, Value: -3}))
	f.Add(ev, encodeEventValue(kindEvent, eventValue{Timestamp: 6, Value: -3}))
	f.Add(eventBucketPrefix("n", "c", 0), encodeEventValue(kindBucketDeletion, eventValue{Timestamp: 9, Deleted: true}))
	f.Add(rollupKey("n", "c"), encodeEventValue(kindRollup, eventValue{Timestamp: 9, Value: math.MinInt64}))
	f.Add(markerKey("n", "c", 0), encodeEventValue(kindMarker, eventValue{Timestamp: 0}))
	f.Add(markerKey("n", "c", 0), encodeEventValue(kindMarker, eventValue{Timestamp: 9, Deleted: true}))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		k, err := decodeEventKey(key)
		if err != nil {
			return
		}
		v, err := decodeEventValue(k, value)
		if err != nil {
			return
		}
		if k.Kind == kindEvent && v.Timestamp != k.Time {
			t.Fatalf("event at time %d accepted with timestamp %d", k.Time, v.Timestamp)
		}
		if got := encodeEventValue(k.Kind, v); !bytes.Equal(got, value) {
			t.Fatalf("decodeEventValue(%+v, %x) = %+v, which re-encodes as %x", k, value, v, got)
		}
	})
}

// FuzzDecodeEventSeal checks the seal decoder: it must refuse what it
// cannot read, and what it accepts must re-encode to the same bytes. The
// start comes from the key and plays no part in the value.
func FuzzDecodeEventSeal(f *testing.F) {
	f.Add(encodeEventSeal(driver.EventSeal{Start: 1, End: 2, Value: 3, Events: []byte("events")}))
	f.Add(encodeEventSeal(driver.EventSeal{End: math.MinInt64, Value: math.MaxInt64, Clear: true}))
	f.Add(encodeEventSeal(driver.EventSeal{End: -1, Value: -1, Events: make([]byte, 200)}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeEventSeal(7, b)
		if err != nil {
			return
		}
		if s.Start != 7 {
			t.Fatalf("decodeEventSeal(7, %x) has start %d", b, s.Start)
		}
		if s.Events != nil && len(s.Events) == 0 {
			t.Fatalf("decodeEventSeal(%x) returned empty events that are not nil", b)
		}
		if got := encodeEventSeal(s); !bytes.Equal(got, b) {
			t.Fatalf("decodeEventSeal(%x) = %+v, which re-encodes as %x", b, s, got)
		}
	})
}

// TestEventSeedCorpus keeps the hand-written seeds honest: files named
// valid-* must decode, files named bad-* must not. Value seeds hold a key
// and a cell.
func TestEventSeedCorpus(t *testing.T) {
	t.Parallel()
	decoders := map[string]func(string, [][]byte) error{
		"FuzzDecodeEventKey": func(_ string, args [][]byte) error { _, err := decodeEventKey(args[0]); return err },
		"FuzzDecodeEventValue": func(_ string, args [][]byte) error {
			k, err := decodeEventKey(args[0])
			if err != nil {
				return err
			}
			_, err = decodeEventValue(k, args[1])
			return err
		},
		"FuzzDecodeEventSeal": oneArg(func(b []byte) error { _, err := decodeEventSeal(0, b); return err }),
	}
	checkSeedCorpus(t, decoders, map[string]int{"FuzzDecodeEventKey": 1, "FuzzDecodeEventValue": 2}, 8)
}
