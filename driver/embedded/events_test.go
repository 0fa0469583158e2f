package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/abacusdb/abacus/driver"
	"github.com/cockroachdb/pebble/v2"
)

// TestEventKeysSortAsCassandraClusters checks the byte order of the keys
// against the clustering order the driver promises: buckets and markers
// ascending, a bucket's events newest first with ties by id in byte
// order, the bucket deletion cell before every event, negative and
// extreme values included.
func TestEventKeysSortAsCassandraClusters(t *testing.T) {
	t.Parallel()
	type ev struct {
		t  int64
		id string
	}
	want := []ev{
		{math.MaxInt64, ""}, {math.MaxInt64, "a"}, {5, ""}, {5, "B"}, {5, "a"}, {5, "a\x00"}, {5, "ab"}, {5, "b"},
		{0, "z"}, {-1, "a"}, {-1 << 40, "a"}, {math.MinInt64, "a"},
	}
	keys := [][]byte{eventBucketPrefix("n", "c", 7)}
	for _, e := range want {
		keys = append(keys, eventKey("n", "c", 7, e.t, e.id))
	}
	if !slices.IsSortedFunc(keys, bytes.Compare) {
		t.Fatal("event keys do not sort deletion cell first, then newest first with ties by id")
	}
	for i, e := range want {
		k, err := eventKeyAfter(keys[i+1], len(keys[0]))
		if err != nil || k.Time != e.t || k.ID != e.id {
			t.Errorf("eventKeyAfter(%x) = %+v, %v; want %+v", keys[i+1], k, err, e)
		}
	}
	buckets := []int64{math.MinInt64, -60, -1, 0, 1, 60, math.MaxInt64}
	var markers, prefixes [][]byte
	for _, b := range buckets {
		markers = append(markers, markerKey("n", "c", b))
		prefixes = append(prefixes, eventBucketPrefix("n", "c", b))
	}
	if !slices.IsSortedFunc(markers, bytes.Compare) || !slices.IsSortedFunc(prefixes, bytes.Compare) {
		t.Error("markers or bucket prefixes do not sort by bucket")
	}
	if bytes.Compare(rollupKey("n", "c"), markers[0]) >= 0 {
		t.Error("the rollup does not sort before the markers")
	}
	// Look-alike names: neither counter's keys lie under the other's
	// prefix.
	for _, pair := range [][2][]byte{
		{eventRecordPrefix("na", "b"), eventRecordPrefix("n", "ab")},
		{eventBucketPrefix("na", "b", 1), eventBucketPrefix("n", "ab", 1)},
		{eventRecordPrefix("n", "a"), eventRecordPrefix("n", "ab")},
	} {
		if bytes.HasPrefix(pair[0], pair[1]) || bytes.HasPrefix(pair[1], pair[0]) {
			t.Errorf("%x and %x overlap", pair[0], pair[1])
		}
	}
}

// TestEventsExtremeTimes: times anywhere in int64 (Cassandra would refuse
// some as timestamps; Pebble has no such limit) read back newest first.
func TestEventsExtremeTimes(t *testing.T) {
	t.Parallel()
	d := openMem(t)
	c := context.Background()
	in := []driver.Event{
		{ID: "min", Time: math.MinInt64, Delta: 1},
		{ID: "neg", Time: -5, Delta: 2},
		{ID: "zero", Time: 0, Delta: 3},
		{ID: "max", Time: math.MaxInt64, Delta: 4},
	}
	for _, e := range in {
		if err := d.WriteEvent(c, &driver.WriteEventParams{Namespace: "n", Counter: "c", Bucket: -60, Event: e}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := d.ReadEvents(c, &driver.ReadEventsParams{Namespace: "n", Counter: "c", Bucket: -60, After: math.MinInt64, UpTo: math.MaxInt64})
	want := []driver.Event{in[3], in[2], in[1]} // MinInt64 is never after After
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadEvents = %+v, %v; want %+v", got, err, want)
	}
	if err := d.DeleteEventBuckets(c, &driver.DeleteEventBucketsParams{Namespace: "n", Counter: "c", Buckets: []int64{-60}, Timestamp: -1}); err != nil {
		t.Fatal(err)
	}
	got, err = d.ReadEvents(c, &driver.ReadEventsParams{Namespace: "n", Counter: "c", Bucket: -60, After: math.MinInt64, UpTo: math.MaxInt64})
	if want := want[:2]; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadEvents after deleting up to -1 = %+v, %v; want %+v", got, err, want)
	}
}

// TestDeleteEventBucketsFreesEvents: the deleted events' keys are gone
// from the store, not merely hidden; the deletion cell stays and still
// hides a late write, which is stored but never read.
func TestDeleteEventBucketsFreesEvents(t *testing.T) {
	t.Parallel()
	d := openMem(t)
	c := context.Background()
	write := func(tm int64, id string) {
		t.Helper()
		err := d.WriteEvent(c, &driver.WriteEventParams{Namespace: "n", Counter: "c", Bucket: 100, Event: driver.Event{ID: id, Time: tm, Delta: 1}})
		if err != nil {
			t.Fatal(err)
		}
	}
	for tm := int64(100); tm < 110; tm++ {
		write(tm, "e")
	}
	if err := d.DeleteEventBuckets(c, &driver.DeleteEventBucketsParams{Namespace: "n", Counter: "c", Buckets: []int64{100}, Timestamp: 104}); err != nil {
		t.Fatal(err)
	}
	write(101, "late")
	prefix := eventBucketPrefix("n", "c", 100)
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var stored []string
	for valid := it.First(); valid; valid = it.Next() {
		k, err := decodeEventKey(it.Key())
		if err != nil {
			t.Fatal(err)
		}
		if k.Kind == kindBucketDeletion {
			stored = append(stored, "deletion")
			continue
		}
		stored = append(stored, fmt.Sprintf("%s@%d", k.ID, k.Time))
	}
	want := []string{"deletion", "e@109", "e@108", "e@107", "e@106", "e@105", "late@101"}
	if !slices.Equal(stored, want) {
		t.Fatalf("stored keys %v, want %v", stored, want)
	}
	got, err := d.ReadEvents(c, &driver.ReadEventsParams{Namespace: "n", Counter: "c", Bucket: 100, After: 0, UpTo: 200})
	if err != nil || len(got) != 5 || got[4].Time != 105 {
		t.Fatalf("ReadEvents = %+v, %v; want the 5 events after 104", got, err)
	}
}

// TestEventsCorruptCells: a cell the driver could not have written makes
// the read fail rather than be guessed at.
func TestEventsCorruptCells(t *testing.T) {
	t.Parallel()
	c := context.Background()
	for name, kv := range map[string][2][]byte{
		"event at another timestamp": {eventKey("n", "c", 0, 5, "r"), encodeEventValue(kindEvent, eventValue{Timestamp: 6, Value: 1})},
		"live bucket deletion":       {eventBucketPrefix("n", "c", 0), appendCell(nil, cell{Timestamp: 1})},
		"short delta":                {eventKey("n", "c", 0, 5, "r"), appendCell(nil, cell{Timestamp: 5, Payload: []byte{1}})},
	} {
		t.Run(name, func(t *testing.T) {
			d := openMem(t)
			if err := d.db.Set(kv[0], kv[1], pebble.Sync); err != nil {
				t.Fatal(err)
			}
			_, err := d.ReadEvents(c, &driver.ReadEventsParams{Namespace: "n", Counter: "c", Bucket: 0, After: 0, UpTo: 10})
			if !errors.Is(err, errCorrupt) {
				t.Fatalf("ReadEvents = %v, want errCorrupt", err)
			}
		})
	}
	for name, kv := range map[string][2][]byte{
		"marker with payload": {markerKey("n", "c", 0), appendCell(nil, cell{Timestamp: 1, Payload: []byte{1}})},
		"deleted rollup":      {rollupKey("n", "c"), appendCell(nil, cell{Timestamp: 1, Tombstone: true})},
		"stray record key":    {append(eventRecordPrefix("n", "c"), 0x02), appendCell(nil, cell{Timestamp: 1})},
	} {
		t.Run(name, func(t *testing.T) {
			d := openMem(t)
			if err := d.db.Set(kv[0], kv[1], pebble.Sync); err != nil {
				t.Fatal(err)
			}
			if _, err := d.ReadEventCounter(c, &driver.ReadEventCounterParams{Namespace: "n", Counter: "c"}); err == nil {
				t.Fatal("ReadEventCounter read a corrupt record")
			}
			if _, err := d.ListEventCounters(c, &driver.ListCountersParams{}); err == nil {
				t.Fatal("ListEventCounters read a corrupt record")
			}
		})
	}
}
