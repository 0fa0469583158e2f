package drivertest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// Times of the events tests, in microseconds: a bucket start in 2023 and
// a one-minute bucket width. Event times are also write timestamps, so
// they are realistic rather than small.
const (
	evBase  int64 = 1_700_000_040_000_000
	evWidth int64 = 60_000_000
)

// exerciseEvents checks the contracts of driver.Events: events are rows
// keyed by (time, id) that a replay writes again, read newest first within
// half-open ranges; markers and rollups follow the timestamp rules; and
// DeleteEventBuckets removes what was written at or below its timestamp,
// for good, and nothing above it. open is only used to get a handle to
// close.
func exerciseEvents(t *testing.T, d driver.Events, open Opener) {
	t.Run("NeverWritten", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-evnone")
		ec := readEventCounter(t, d, ns, "c")
		if ec == nil || ec.Rollup != nil || len(ec.Buckets) != 0 {
			t.Fatalf("ReadEventCounter of an unwritten counter = %+v, want an empty record", ec)
		}
		if got := readEvents(t, d, ns, "c", evBase, math.MinInt64, math.MaxInt64); len(got) != 0 {
			t.Fatalf("ReadEvents of an unwritten bucket = %+v, want none", got)
		}
	})

	t.Run("RoundTripNewestFirstTiesByID", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-evorder")
		// Written out of order, with ties on time whose ids differ in
		// length and case: ties go by id in byte order, not by length.
		in := []driver.Event{
			{ID: "b", Time: evBase + 5, Delta: 1},
			{ID: "req-1", Time: evBase + 1, Delta: -7},
			{ID: "a", Time: evBase + 5, Delta: 2},
			{ID: "ab", Time: evBase + 5, Delta: 3},
			{ID: "B", Time: evBase + 5, Delta: 4},
			{ID: "a-long-id", Time: evBase + 5, Delta: 5},
			{ID: "z", Time: evBase + 9, Delta: 0},
			{ID: "m", Time: evBase, Delta: math.MaxInt64},
			{ID: "n", Time: evBase + 2, Delta: math.MinInt64},
		}
		for _, e := range in {
			writeEvent(t, d, ns, "c", evBase, e)
		}
		want := []driver.Event{
			{ID: "z", Time: evBase + 9, Delta: 0},
			{ID: "B", Time: evBase + 5, Delta: 4},
			{ID: "a", Time: evBase + 5, Delta: 2},
			{ID: "a-long-id", Time: evBase + 5, Delta: 5},
			{ID: "ab", Time: evBase + 5, Delta: 3},
			{ID: "b", Time: evBase + 5, Delta: 1},
			{ID: "n", Time: evBase + 2, Delta: math.MinInt64},
			{ID: "req-1", Time: evBase + 1, Delta: -7},
			{ID: "m", Time: evBase, Delta: math.MaxInt64},
		}
		if got := readEvents(t, d, ns, "c", evBase, math.MinInt64, math.MaxInt64); !reflect.DeepEqual(got, want) {
			t.Fatalf("ReadEvents =\n %+v\nwant\n %+v", got, want)
		}
	})

	t.Run("SameEventTwiceIsOneRow", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-evreplay")
		e := driver.Event{ID: "req-1", Time: evBase + 3, Delta: 5}
		writeEvent(t, d, ns, "c", evBase, e)
		writeEvent(t, d, ns, "c", evBase, e)
		// The same id at another time is another event.
		other := driver.Event{ID: "req-1", Time: evBase + 4, Delta: 5}
		writeEvent(t, d, ns, "c", evBase, other)
		want := []driver.Event{other, e}
		if got := readEvents(t, d, ns, "c", evBase, math.MinInt64, math.MaxInt64); !reflect.DeepEqual(got, want) {
			t.Fatalf("ReadEvents after a replay = %+v, want %+v", got, want)
		}
	})

	t.Run("SameKeyDifferentDeltasOneWinner", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-evtie")
		// The same (time, id) with two deltas, in both orders: whichever
		// wins, it must not depend on the order the writes arrived in.
		var got [2][]driver.Event
		for i, order := range [2][2]int64{{5, -7}, {-7, 5}} {
			counter := fmt.Sprint("c", i)
			for _, delta := range order {
				writeEvent(t, d, ns, counter, evBase, driver.Event{ID: "r", Time: evBase + 1, Delta: delta})
			}
			got[i] = readEvents(t, d, ns, counter, evBase, math.MinInt64, math.MaxInt64)
			if len(got[i]) != 1 || (got[i][0].Delta != 5 && got[i][0].Delta != -7) {
				t.Fatalf("%s: ReadEvents = %+v, want one event with delta 5 or -7", counter, got[i])
			}
		}
		if got[0][0] != got[1][0] {
			t.Fatalf("the winner depends on the write order: %+v vs %+v", got[0][0], got[1][0])
		}
	})

	t.Run("WriteEventsAsWriteEvent", func(t *testing.T) {
		t.Parallel()
		// Each write of a batch is the WriteEvent it stands for: counters
		// whose names a concatenating key would mix up, two buckets, an
		// event twice in one batch and one written before on its own
		// (one row each), and a late event into a bucket deleted at a
		// higher timestamp (it stays deleted).
		ns := unique("ns-evbatch")
		b1, b2 := evBase, evBase+evWidth
		done := driver.Event{ID: "done", Time: b1 + 1, Delta: 3}
		writeEvent(t, d, ns, "ab", b1, done)
		writeEvent(t, d, ns, "old", b1, driver.Event{ID: "o", Time: b1 + 1, Delta: 1})
		deleteBuckets(t, d, ns, "old", b1+5, b1)
		w := func(counter string, bucket int64, e driver.Event) driver.WriteEventParams {
			return driver.WriteEventParams{Namespace: ns, Counter: counter, Bucket: bucket, Event: e}
		}
		e1, e2 := driver.Event{ID: "r1", Time: b1 + 2, Delta: 5}, driver.Event{ID: "r2", Time: b2 + 1, Delta: -2}
		other := driver.Event{ID: "r1", Time: b1 + 2, Delta: 7}
		late := driver.Event{ID: "late", Time: b1 + 4, Delta: 100}
		err := d.WriteEvents(ctx(t), []driver.WriteEventParams{
			w("ab", b1, e1), w("ab", b2, e2), w("a", b1, other), w("ab", b1, e1), w("ab", b1, done), w("old", b1, late),
		})
		if err != nil {
			t.Fatalf("WriteEvents: %v", err)
		}
		for _, c := range []struct {
			counter string
			bucket  int64
			want    []driver.Event
		}{
			{"ab", b1, []driver.Event{e1, done}},
			{"ab", b2, []driver.Event{e2}},
			{"a", b1, []driver.Event{other}},
			{"old", b1, []driver.Event{}},
		} {
			got := readEvents(t, d, ns, c.counter, c.bucket, math.MinInt64, math.MaxInt64)
			if len(got) == 0 && len(c.want) == 0 {
				continue
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s bucket %d after WriteEvents = %+v, want %+v", c.counter, c.bucket, got, c.want)
			}
		}
		if err := d.WriteEvents(ctx(t), nil); err != nil {
			t.Fatalf("WriteEvents of nothing: %v", err)
		}
		one, quorum := w("lv", b1, e1), w("lv", b1, e2)
		one.Consistency, quorum.Consistency = driver.One, driver.Quorum
		if err := d.WriteEvents(ctx(t), []driver.WriteEventParams{one, quorum}); err == nil {
			t.Fatal("WriteEvents at two levels: no error")
		}
		if got := readEvents(t, d, ns, "lv", b1, math.MinInt64, math.MaxInt64); len(got) != 0 {
			t.Fatalf("a refused batch wrote %+v", got)
		}
	})

	t.Run("RangeIsAfterExclusiveUpToInclusive", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-evrange")
		for i := range int64(10) {
			writeEvent(t, d, ns, "c", evBase, driver.Event{ID: fmt.Sprint("e", i), Time: evBase + i, Delta: i})
		}
		times := func(events []driver.Event) []int64 {
			out := []int64{}
			for _, e := range events {
				out = append(out, e.Time-evBase)
			}
			return out
		}
		for _, tc := range []struct {
			after, upTo int64
			want        []int64
		}{
			{3, 7, []int64{7, 6, 5, 4}},
			{-1, 0, []int64{0}},
			{8, 100, []int64{9}},
			{9, 100, []int64{}},
			{-100, -1, []int64{}},
			{4, 4, []int64{}},
			{6, 2, []int64{}}, // an empty range, not an error
		} {
			got := times(readEvents(t, d, ns, "c", evBase, evBase+tc.after, evBase+tc.upTo))
			if !slices.Equal(got, tc.want) {
				t.Errorf("ReadEvents(%d < time <= %d) = %v, want %v (offsets from the bucket)", tc.after, tc.upTo, got, tc.want)
			}
		}
	})

	t.Run("CountersBucketsNamespacesIsolated", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-eviso")
		// (ns+"a", "b") and (ns, "ab") concatenate to the same bytes.
		type key struct {
			ns, counter string
			bucket      int64
		}
		keys := []key{
			{ns, "ab", evBase}, {ns + "a", "b", evBase}, {ns, "ab", evBase + evWidth},
			{ns, "a", evBase}, {ns + "x", "ab", evBase},
		}
		for i, k := range keys {
			writeEvent(t, d, k.ns, k.counter, k.bucket, driver.Event{ID: "r", Time: k.bucket + 1, Delta: int64(i)})
			markBucket(t, d, k.ns, k.counter, k.bucket)
			writeRollup(t, d, k.ns, k.counter, driver.Rollup{Value: int64(i), Epoch: evBase - 100 + int64(i)})
		}
		for i, k := range keys {
			want := []driver.Event{{ID: "r", Time: k.bucket + 1, Delta: int64(i)}}
			if got := readEvents(t, d, k.ns, k.counter, k.bucket, math.MinInt64, math.MaxInt64); !reflect.DeepEqual(got, want) {
				t.Errorf("%+v: ReadEvents = %+v, want %+v", k, got, want)
			}
		}
		// Records are per counter: (ns, "ab") has both of its buckets and
		// the last of its rollups.
		for _, tc := range []struct {
			ns, counter string
			want        driver.EventCounter
		}{
			{ns, "ab", driver.EventCounter{Rollup: &driver.Rollup{Value: 2, Epoch: evBase - 98}, Buckets: []int64{evBase, evBase + evWidth}}},
			{ns + "a", "b", driver.EventCounter{Rollup: &driver.Rollup{Value: 1, Epoch: evBase - 99}, Buckets: []int64{evBase}}},
			{ns, "a", driver.EventCounter{Rollup: &driver.Rollup{Value: 3, Epoch: evBase - 97}, Buckets: []int64{evBase}}},
			{ns + "x", "ab", driver.EventCounter{Rollup: &driver.Rollup{Value: 4, Epoch: evBase - 96}, Buckets: []int64{evBase}}},
		} {
			if got := readEventCounter(t, d, tc.ns, tc.counter); !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("%s/%s: ReadEventCounter = %s, want %s", tc.ns, tc.counter, fmtCounter(got), fmtCounter(&tc.want))
			}
		}
	})

	t.Run("MarkersIdempotentAscending", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-evmark")
		for _, b := range []int64{3, 1, 2, 1, 3, -1, 0} {
			markBucket(t, d, ns, "c", evBase+b*evWidth)
		}
		want := []int64{evBase - evWidth, evBase, evBase + evWidth, evBase + 2*evWidth, evBase + 3*evWidth}
		ec := readEventCounter(t, d, ns, "c")
		if ec.Rollup != nil || !slices.Equal(ec.Buckets, want) {
			t.Fatalf("ReadEventCounter = %s, want buckets %v and no rollup", fmtCounter(ec), want)
		}
	})

	t.Run("RollupHigherEpochWins", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-evrollup")
		markBucket(t, d, ns, "c", evBase)
		writeRollup(t, d, ns, "c", driver.Rollup{Value: 10, Epoch: evBase + 200})
		writeRollup(t, d, ns, "c", driver.Rollup{Value: 99, Epoch: evBase + 100}) // late and older
		wantRollup(t, d, ns, "c", driver.Rollup{Value: 10, Epoch: evBase + 200})
		writeRollup(t, d, ns, "c", driver.Rollup{Value: 10, Epoch: evBase + 200}) // a replay
		wantRollup(t, d, ns, "c", driver.Rollup{Value: 10, Epoch: evBase + 200})
		writeRollup(t, d, ns, "c", driver.Rollup{Value: -3, Epoch: evBase + 201})
		wantRollup(t, d, ns, "c", driver.Rollup{Value: -3, Epoch: evBase + 201})
		if ec := readEventCounter(t, d, ns, "c"); !slices.Equal(ec.Buckets, []int64{evBase}) {
			t.Errorf("rollups changed the markers: %s", fmtCounter(ec))
		}
	})

	t.Run("RollupSameEpochOneWinner", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-evrolltie")
		var got [2]*driver.Rollup
		for i, order := range [2][2]int64{{5, -7}, {-7, 5}} {
			counter := fmt.Sprint("c", i)
			for _, v := range order {
				writeRollup(t, d, ns, counter, driver.Rollup{Value: v, Epoch: evBase})
			}
			got[i] = readEventCounter(t, d, ns, counter).Rollup
			if got[i] == nil || got[i].Epoch != evBase || (got[i].Value != 5 && got[i].Value != -7) {
				t.Fatalf("%s: rollup %+v, want value 5 or -7 at epoch %d", counter, got[i], evBase)
			}
		}
		if *got[0] != *got[1] {
			t.Fatalf("the winner depends on the write order: %+v vs %+v", *got[0], *got[1])
		}
	})

	t.Run("DeleteEventBuckets", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-evdel")
		b1, b2 := evBase, evBase+evWidth
		for i := int64(1); i <= 10; i++ {
			writeEvent(t, d, ns, "c", b1, driver.Event{ID: fmt.Sprint("e", i), Time: b1 + i, Delta: 1})
		}
		b2Events := []driver.Event{{ID: "x", Time: b2 + 2, Delta: 7}, {ID: "y", Time: b2 + 1, Delta: 8}}
		for _, e := range b2Events {
			writeEvent(t, d, ns, "c", b2, e)
		}
		markBucket(t, d, ns, "c", b1)
		markBucket(t, d, ns, "c", b2)
		epoch := b1 + 5
		writeRollup(t, d, ns, "c", driver.Rollup{Value: 5, Epoch: epoch})
		deleteBuckets(t, d, ns, "c", epoch, b1)

		survivors := []driver.Event{}
		for i := int64(10); i > 5; i-- {
			survivors = append(survivors, driver.Event{ID: fmt.Sprint("e", i), Time: b1 + i, Delta: 1})
		}
		check := func(step string, wantB1 []driver.Event) {
			t.Helper()
			if got := readEvents(t, d, ns, "c", b1, math.MinInt64, math.MaxInt64); !reflect.DeepEqual(got, wantB1) {
				t.Errorf("%s: bucket 1 = %+v, want %+v", step, got, wantB1)
			}
			if got := readEvents(t, d, ns, "c", b2, math.MinInt64, math.MaxInt64); !reflect.DeepEqual(got, b2Events) {
				t.Errorf("%s: bucket 2 = %+v, want it untouched: %+v", step, got, b2Events)
			}
			want := driver.EventCounter{Rollup: &driver.Rollup{Value: 5, Epoch: epoch}, Buckets: []int64{b2}}
			if got := readEventCounter(t, d, ns, "c"); !reflect.DeepEqual(*got, want) {
				t.Errorf("%s: record = %s, want %s", step, fmtCounter(got), fmtCounter(&want))
			}
		}
		check("after the delete", survivors)

		// Late writes at or below the delete's timestamp stay deleted: a
		// replay of a deleted event, an event never seen before, one at
		// exactly the timestamp (a tie goes to the delete), and the marker.
		for _, e := range []driver.Event{
			{ID: "e3", Time: b1 + 3, Delta: 1},
			{ID: "late", Time: b1 + 4, Delta: 100},
			{ID: "edge", Time: epoch, Delta: 100},
		} {
			writeEvent(t, d, ns, "c", b1, e)
		}
		markBucket(t, d, ns, "c", b1)
		check("after late writes", survivors)

		// Replaying the delete changes nothing.
		deleteBuckets(t, d, ns, "c", epoch, b1)
		check("after a replay", survivors)

		// An event after the timestamp still lands in the bucket.
		newer := driver.Event{ID: "new", Time: b1 + 11, Delta: 1}
		writeEvent(t, d, ns, "c", b1, newer)
		check("after a newer write", append([]driver.Event{newer}, survivors...))
	})

	t.Run("DeleteBelowMarkerKeepsIt", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-evdelkeep")
		b := evBase
		events := []driver.Event{{ID: "b", Time: b + 2, Delta: 2}, {ID: "a", Time: b, Delta: 1}}
		for _, e := range events {
			writeEvent(t, d, ns, "c", b, e)
		}
		markBucket(t, d, ns, "c", b)
		// The marker is written at the bucket start and every event later,
		// so a delete below the start removes nothing.
		deleteBuckets(t, d, ns, "c", b-1, b)
		if ec := readEventCounter(t, d, ns, "c"); !slices.Equal(ec.Buckets, []int64{b}) {
			t.Errorf("record after a delete below the marker = %s, want the marker kept", fmtCounter(ec))
		}
		if got := readEvents(t, d, ns, "c", b, math.MinInt64, math.MaxInt64); !reflect.DeepEqual(got, events) {
			t.Errorf("events after a delete below them = %+v, want %+v", got, events)
		}
		// At the bucket start the marker goes (a tie goes to the delete),
		// and so does the event at that time, but not the later one.
		deleteBuckets(t, d, ns, "c", b, b)
		if ec := readEventCounter(t, d, ns, "c"); len(ec.Buckets) != 0 {
			t.Errorf("record after a delete at the marker's timestamp = %s, want no markers", fmtCounter(ec))
		}
		if got := readEvents(t, d, ns, "c", b, math.MinInt64, math.MaxInt64); !reflect.DeepEqual(got, events[:1]) {
			t.Errorf("events after a delete at the bucket start = %+v, want %+v", got, events[:1])
		}
		// Deleting no buckets is a no-op.
		deleteBuckets(t, d, ns, "c", b+100)
		if got := readEvents(t, d, ns, "c", b, math.MinInt64, math.MaxInt64); !reflect.DeepEqual(got, events[:1]) {
			t.Errorf("events after deleting no buckets = %+v, want %+v", got, events[:1])
		}
	})

	t.Run("TimesBeforeTheEpoch", func(t *testing.T) {
		t.Parallel()
		// Negative times are valid timestamps too; every write and delete
		// must take them (Cassandra refuses a negative timestamp in a
		// batch frame, but not in USING TIMESTAMP).
		ns := unique("ns-evneg")
		b := -2 * evWidth
		events := []driver.Event{{ID: "c", Time: b + 3, Delta: 3}, {ID: "b", Time: b + 2, Delta: 2}, {ID: "a", Time: b + 1, Delta: 1}}
		for _, e := range events {
			writeEvent(t, d, ns, "c", b, e)
		}
		markBucket(t, d, ns, "c", b)
		markBucket(t, d, ns, "c", b+evWidth)
		writeRollup(t, d, ns, "c", driver.Rollup{Value: 3, Epoch: b + 2})
		if got := readEvents(t, d, ns, "c", b, b, b+2); !reflect.DeepEqual(got, events[1:]) {
			t.Errorf("ReadEvents(%d, %d] = %+v, want %+v", b, b+2, got, events[1:])
		}
		deleteBuckets(t, d, ns, "c", b+2, b)
		if got := readEvents(t, d, ns, "c", b, math.MinInt64, math.MaxInt64); !reflect.DeepEqual(got, events[:1]) {
			t.Errorf("events after a delete at %d = %+v, want %+v", b+2, got, events[:1])
		}
		want := driver.EventCounter{Rollup: &driver.Rollup{Value: 3, Epoch: b + 2}, Buckets: []int64{b + evWidth}}
		if got := readEventCounter(t, d, ns, "c"); !reflect.DeepEqual(*got, want) {
			t.Errorf("record = %s, want %s", fmtCounter(got), fmtCounter(&want))
		}
	})

	t.Run("ListEventCounters", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-evlist")
		other := ns + "-other"
		writeRollup(t, d, ns, "rollup-only", driver.Rollup{Value: 1, Epoch: evBase})
		markBucket(t, d, ns, "marker-only", evBase)
		writeRollup(t, d, ns, "both", driver.Rollup{Value: 1, Epoch: evBase})
		markBucket(t, d, ns, "both", evBase)
		markBucket(t, d, other, "rollup-only", evBase)
		// Events alone make no record, and a counter whose only marker
		// was deleted has none left.
		writeEvent(t, d, ns, "events-only", evBase, driver.Event{ID: "r", Time: evBase + 1, Delta: 1})
		markBucket(t, d, ns, "deleted", evBase)
		deleteBuckets(t, d, ns, "deleted", evBase+evWidth, evBase)
		want := []driver.CounterKey{{Namespace: ns, Counter: "both"}, {Namespace: ns, Counter: "marker-only"}, {Namespace: ns, Counter: "rollup-only"}}
		if got := listEventCounters(t, d, ns); !reflect.DeepEqual(got, want) {
			t.Errorf("ListEventCounters(%s) = %+v, want %+v", ns, got, want)
		}
		all := listEventCounters(t, d, "")
		if !slices.IsSortedFunc(all, func(a, b driver.CounterKey) int {
			return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Counter, b.Counter))
		}) {
			t.Errorf("ListEventCounters of every namespace is not sorted")
		}
		for _, k := range append(want, driver.CounterKey{Namespace: other, Counter: "rollup-only"}) {
			if !slices.Contains(all, k) {
				t.Errorf("ListEventCounters of every namespace lacks %+v", k)
			}
		}
	})

	t.Run("LargeBucketReadWhole", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-evlarge")
		// Two events per microsecond, so that ties also straddle the
		// boundaries of whatever pages the driver reads in.
		const n = 20_000
		c, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		event := func(i int) driver.Event {
			return driver.Event{ID: fmt.Sprintf("r%05d", i), Time: evBase + int64(i/2), Delta: int64(i%7) - 3}
		}
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			firstErr error
		)
		const writers = 16
		for w := range writers {
			wg.Go(func() {
				for i := w; i < n; i += writers {
					err := d.WriteEvent(c, &driver.WriteEventParams{Namespace: ns, Counter: "c", Bucket: evBase, Event: event(i)})
					if err != nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = fmt.Errorf("WriteEvent %d: %w", i, err)
						}
						mu.Unlock()
						cancel()
						return
					}
				}
			})
		}
		wg.Wait()
		if firstErr != nil {
			t.Fatal(firstErr)
		}
		got, err := d.ReadEvents(c, &driver.ReadEventsParams{Namespace: ns, Counter: "c", Bucket: evBase, After: math.MinInt64, UpTo: math.MaxInt64})
		if err != nil {
			t.Fatalf("ReadEvents: %v", err)
		}
		if len(got) != n {
			t.Fatalf("ReadEvents returned %d events, want %d", len(got), n)
		}
		for j, e := range got {
			// Newest first: the last pair comes first, each pair by id.
			i := n - 2 - j/2*2 + j%2
			if e != event(i) {
				t.Fatalf("event %d = %+v, want %+v", j, e, event(i))
			}
		}
		// A slice from the middle, bounded on both sides.
		after, upTo := evBase+1234, evBase+8765
		got, err = d.ReadEvents(c, &driver.ReadEventsParams{Namespace: ns, Counter: "c", Bucket: evBase, After: after, UpTo: upTo})
		if err != nil {
			t.Fatalf("ReadEvents of a slice: %v", err)
		}
		if want := 2 * int(upTo-after); len(got) != want || got[0].Time != upTo || got[len(got)-1].Time != after+1 {
			t.Fatalf("ReadEvents(%d, %d] returned %d events from %d to %d, want %d from %d to %d",
				after, upTo, len(got), got[0].Time, got[len(got)-1].Time, want, upTo, after+1)
		}
	})

	t.Run("Seals", func(t *testing.T) { t.Parallel(); exerciseEventSeals(t, d, open) })
	t.Run("Closed", func(t *testing.T) {
		d2 := capability[driver.Events](t, openClosed(t, open))
		c := context.Background()
		_, err := d2.ReadEventCounter(c, &driver.ReadEventCounterParams{Namespace: "x", Counter: "y"})
		wantClosed(t, "ReadEventCounter", err)
		_, err = d2.ReadEvents(c, &driver.ReadEventsParams{Namespace: "x", Counter: "y", Bucket: 1, After: 0, UpTo: 10})
		wantClosed(t, "ReadEvents", err)
		_, err = d2.ListEventCounters(c, &driver.ListCountersParams{})
		wantClosed(t, "ListEventCounters", err)
		err = d2.WriteEvent(c, &driver.WriteEventParams{Namespace: "x", Counter: "y", Bucket: 1, Event: driver.Event{ID: "r", Time: 2, Delta: 1}})
		wantClosed(t, "WriteEvent", err)
		err = d2.WriteEvents(c, []driver.WriteEventParams{{Namespace: "x", Counter: "y", Bucket: 1, Event: driver.Event{ID: "r", Time: 2, Delta: 1}}})
		wantClosed(t, "WriteEvents", err)
		err = d2.MarkEventBucket(c, &driver.MarkEventBucketParams{Namespace: "x", Counter: "y", Bucket: 1})
		wantClosed(t, "MarkEventBucket", err)
		err = d2.WriteRollup(c, &driver.WriteRollupParams{Namespace: "x", Counter: "y", Rollup: driver.Rollup{Value: 1, Epoch: 2}})
		wantClosed(t, "WriteRollup", err)
		err = d2.DeleteEventBuckets(c, &driver.DeleteEventBucketsParams{Namespace: "x", Counter: "y", Buckets: []int64{1}, Timestamp: 2})
		wantClosed(t, "DeleteEventBuckets", err)
	})
}

func wantClosed(t *testing.T, op string, err error) {
	t.Helper()
	if !errors.Is(err, driver.ErrClosed) {
		t.Errorf("%s after Close: got %v, want ErrClosed", op, err)
	}
}

func fmtCounter(ec *driver.EventCounter) string {
	if ec == nil {
		return "<nil>"
	}
	r := "no rollup"
	if ec.Rollup != nil {
		r = fmt.Sprintf("rollup %d@%d", ec.Rollup.Value, ec.Rollup.Epoch)
	}
	return fmt.Sprintf("{%s, buckets %v}", r, ec.Buckets)
}

func writeEvent(t *testing.T, d driver.Events, ns, counter string, bucket int64, e driver.Event) {
	t.Helper()
	err := d.WriteEvent(ctx(t), &driver.WriteEventParams{Namespace: ns, Counter: counter, Bucket: bucket, Event: e})
	if err != nil {
		t.Fatalf("WriteEvent(%s/%s/%d %+v): %v", ns, counter, bucket, e, err)
	}
}

func readEvents(t *testing.T, d driver.Events, ns, counter string, bucket, after, upTo int64) []driver.Event {
	t.Helper()
	events, err := d.ReadEvents(ctx(t), &driver.ReadEventsParams{Namespace: ns, Counter: counter, Bucket: bucket, After: after, UpTo: upTo})
	if err != nil {
		t.Fatalf("ReadEvents(%s/%s/%d, %d < time <= %d): %v", ns, counter, bucket, after, upTo, err)
	}
	return events
}

func markBucket(t *testing.T, d driver.Events, ns, counter string, bucket int64) {
	t.Helper()
	err := d.MarkEventBucket(ctx(t), &driver.MarkEventBucketParams{Namespace: ns, Counter: counter, Bucket: bucket})
	if err != nil {
		t.Fatalf("MarkEventBucket(%s/%s/%d): %v", ns, counter, bucket, err)
	}
}

func readEventCounter(t *testing.T, d driver.Events, ns, counter string) *driver.EventCounter {
	t.Helper()
	ec, err := d.ReadEventCounter(ctx(t), &driver.ReadEventCounterParams{Namespace: ns, Counter: counter})
	if err != nil {
		t.Fatalf("ReadEventCounter(%s/%s): %v", ns, counter, err)
	}
	return ec
}

func writeRollup(t *testing.T, d driver.Events, ns, counter string, r driver.Rollup) {
	t.Helper()
	err := d.WriteRollup(ctx(t), &driver.WriteRollupParams{Namespace: ns, Counter: counter, Rollup: r})
	if err != nil {
		t.Fatalf("WriteRollup(%s/%s %+v): %v", ns, counter, r, err)
	}
}

func wantRollup(t *testing.T, d driver.Events, ns, counter string, want driver.Rollup) {
	t.Helper()
	if got := readEventCounter(t, d, ns, counter).Rollup; got == nil || *got != want {
		t.Fatalf("rollup of %s/%s = %+v, want %+v", ns, counter, got, want)
	}
}

func deleteBuckets(t *testing.T, d driver.Events, ns, counter string, ts int64, buckets ...int64) {
	t.Helper()
	err := d.DeleteEventBuckets(ctx(t), &driver.DeleteEventBucketsParams{Namespace: ns, Counter: counter, Buckets: buckets, Timestamp: ts})
	if err != nil {
		t.Fatalf("DeleteEventBuckets(%s/%s %v @%d): %v", ns, counter, buckets, ts, err)
	}
}

func listEventCounters(t *testing.T, d driver.Events, ns string) []driver.CounterKey {
	t.Helper()
	keys, err := d.ListEventCounters(ctx(t), &driver.ListCountersParams{Namespace: ns})
	if err != nil {
		t.Fatalf("ListEventCounters(%q): %v", ns, err)
	}
	return keys
}
