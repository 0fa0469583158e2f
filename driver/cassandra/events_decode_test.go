package cassandra

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/abacusdb/abacus/driver"
)

func TestEventSchema(t *testing.T) {
	t.Parallel()
	schemaHas(t,
		"CREATE TABLE IF NOT EXISTS k1.event_counters",
		"rollup_value bigint static",
		"PRIMARY KEY ((ns, counter), bucket)",
		"CREATE TABLE IF NOT EXISTS k1.events",
		"PRIMARY KEY ((ns, counter, bucket), time, id)",
		"CLUSTERING ORDER BY (time DESC, id ASC)",
	)
}

func TestEventCounterFromRows(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	rollup := func(v, e int64) (*int64, *int64) { return ptr(v), ptr(e) }
	v, e := rollup(42, 1000)
	for _, tc := range []struct {
		name string
		rows []eventCounterRow
		want *driver.EventCounter
	}{
		{"never written", nil, &driver.EventCounter{Buckets: []int64{}}},
		{"rollup only", []eventCounterRow{{RollupValue: v, RollupEpoch: e}},
			&driver.EventCounter{Rollup: &driver.Rollup{Value: 42, Epoch: 1000}, Buckets: []int64{}}},
		{"markers only, unsorted", []eventCounterRow{{Bucket: ptr(int64(20)), Marked: &yes}, {Bucket: ptr(int64(-10)), Marked: &yes}},
			&driver.EventCounter{Buckets: []int64{-10, 20}}},
		{"both", []eventCounterRow{{Bucket: ptr(int64(5)), Marked: &yes, RollupValue: v, RollupEpoch: e}},
			&driver.EventCounter{Rollup: &driver.Rollup{Value: 42, Epoch: 1000}, Buckets: []int64{5}}},
	} {
		got, err := eventCounterFromRows(tc.rows)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
	for name, rows := range map[string][]eventCounterRow{
		"empty static row":         {{}},
		"half a rollup (value)":    {{RollupValue: v}},
		"half a rollup (epoch)":    {{Bucket: ptr(int64(1)), Marked: &yes, RollupEpoch: e}},
		"marker without marked":    {{Bucket: ptr(int64(1))}},
		"marker with false":        {{Bucket: ptr(int64(1)), Marked: &no}},
		"marked without bucket":    {{Marked: &yes, RollupValue: v, RollupEpoch: e}},
		"static row among markers": {{RollupValue: v, RollupEpoch: e}, {Bucket: ptr(int64(1)), Marked: &yes, RollupValue: v, RollupEpoch: e}},
		"rollups differ":           {{Bucket: ptr(int64(1)), Marked: &yes, RollupValue: v, RollupEpoch: e}, {Bucket: ptr(int64(2)), Marked: &yes, RollupValue: ptr(int64(43)), RollupEpoch: e}},
		"duplicate bucket":         {{Bucket: ptr(int64(1)), Marked: &yes}, {Bucket: ptr(int64(1)), Marked: &yes}},
	} {
		if got, err := eventCounterFromRows(rows); !errors.Is(err, errBadRow) || got != nil {
			t.Errorf("%s: got %+v, %v; want errBadRow", name, got, err)
		}
	}
}

func TestEventsFromRows(t *testing.T) {
	t.Parallel()
	rows := []eventRow{
		{Time: 7, ID: "b", Delta: ptr(int64(1))},
		{Time: 9, ID: "x", Delta: ptr(int64(-2))},
		{Time: 7, ID: "a", Delta: ptr(int64(3))},
		{Time: 10, ID: "", Delta: ptr(int64(0))},
	}
	got, err := eventsFromRows(rows, 6, 10)
	want := []driver.Event{{ID: "", Time: 10}, {ID: "x", Time: 9, Delta: -2}, {ID: "a", Time: 7, Delta: 3}, {ID: "b", Time: 7, Delta: 1}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("eventsFromRows = %+v, %v; want %+v", got, err, want)
	}
	if got, err := eventsFromRows(nil, 0, 1); err != nil || got == nil || len(got) != 0 {
		t.Errorf("no rows: got %#v, %v; want an empty slice", got, err)
	}
	for name, tc := range map[string]struct {
		rows      []eventRow
		after, up int64
	}{
		"at after":   {[]eventRow{{Time: 6, ID: "a", Delta: ptr(int64(1))}}, 6, 10},
		"past up to": {[]eventRow{{Time: 11, ID: "a", Delta: ptr(int64(1))}}, 6, 10},
		"null delta": {[]eventRow{{Time: 8, ID: "a"}}, 6, 10},
		"duplicate":  {[]eventRow{{Time: 8, ID: "a", Delta: ptr(int64(1))}, {Time: 8, ID: "a", Delta: ptr(int64(2))}}, 6, 10},
	} {
		if got, err := eventsFromRows(tc.rows, tc.after, tc.up); !errors.Is(err, errBadRow) || got != nil {
			t.Errorf("%s: got %+v, %v; want errBadRow", name, got, err)
		}
	}
}

// FuzzEventCounterFromRows: whatever rows a record partition holds, the
// decoder either refuses them as malformed or returns exactly the marked
// buckets, strictly ascending, and the rollup every row agrees on.
func FuzzEventCounterFromRows(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x18, 0, 42, 10})              // rollup only
	f.Add([]byte{0x07, 5, 0, 0, 0x07, 3, 0, 0}) // two markers, no rollup
	f.Add([]byte{0x1f, 5, 1, 2, 0x1f, 3, 1, 2}) // markers with the rollup
	f.Add([]byte{0x1f, 5, 1, 2, 0x1f, 5, 1, 2}) // a duplicate bucket
	f.Add([]byte{0x18, 0, 1, 2, 0x1f, 3, 1, 2}) // the static row among markers
	f.Add([]byte{0x03, 5, 0, 0})                // marked = false
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzBytes(data)
		var rows []eventCounterRow
		for len(in) > 0 && len(rows) < 64 {
			flags := in.byte()
			bucket, value, epoch := in.small(), in.small(), in.small()
			var r eventCounterRow
			if flags&1 != 0 {
				r.Bucket = ptr(bucket)
			}
			if flags&2 != 0 {
				r.Marked = ptr(flags&4 != 0)
			}
			if flags&8 != 0 {
				r.RollupValue = ptr(value)
			}
			if flags&16 != 0 {
				r.RollupEpoch = ptr(epoch)
			}
			rows = append(rows, r)
		}
		ec, err := eventCounterFromRows(rows)
		if err != nil {
			if ec != nil || !errors.Is(err, errBadRow) {
				t.Fatalf("got %+v with error %v", ec, err)
			}
			return
		}
		var want []int64
		for _, r := range rows {
			if r.Bucket != nil {
				want = append(want, *r.Bucket)
			}
			if !sameRollup(ec.Rollup, func() *driver.Rollup { x, _ := rollupFromRow(r); return x }()) {
				t.Fatalf("row %+v disagrees with the decoded rollup %+v", r, ec.Rollup)
			}
		}
		slices.Sort(want)
		if ec.Buckets == nil || len(ec.Buckets) != len(want) || !slices.Equal(ec.Buckets, want) {
			t.Fatalf("buckets %v, want %v", ec.Buckets, want)
		}
		for i := 1; i < len(ec.Buckets); i++ {
			if ec.Buckets[i-1] >= ec.Buckets[i] {
				t.Fatalf("buckets not strictly ascending: %v", ec.Buckets)
			}
		}
	})
}

// FuzzEventsFromRows: a bucket's rows either decode into every row, inside
// the range, newest first with ties by id and no key twice, or are refused.
func FuzzEventsFromRows(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0xf0, 0x10, 0, 5, 1, 'a', 3})                  // one event
	f.Add([]byte{0xf0, 0x10, 0, 5, 1, 'b', 3, 0, 5, 1, 'a', 4}) // a tie on time
	f.Add([]byte{0xf0, 0x10, 0, 5, 1, 'a', 3, 0, 5, 1, 'a', 4}) // a duplicate key
	f.Add([]byte{0x00, 0x10, 0, 0, 0, 1})                       // time == after
	f.Add([]byte{0xf0, 0x10, 1, 5, 1, 'a', 3})                  // a null delta
	f.Add([]byte{0x05, 0x01, 0, 2, 0, 1})                       // after > up to
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzBytes(data)
		after, upTo := in.small(), in.small()
		var rows []eventRow
		for len(in) > 0 && len(rows) < 64 {
			flags := in.byte()
			r := eventRow{Time: in.small(), ID: in.str()}
			if delta := in.small(); flags&1 == 0 {
				r.Delta = ptr(delta)
			}
			rows = append(rows, r)
		}
		out, err := eventsFromRows(rows, after, upTo)
		if err != nil {
			if out != nil || !errors.Is(err, errBadRow) {
				t.Fatalf("got %+v with error %v", out, err)
			}
			return
		}
		if out == nil || len(out) != len(rows) {
			t.Fatalf("%d rows in, %d events out (%#v)", len(rows), len(out), out)
		}
		for i, e := range out {
			if e.Time <= after || e.Time > upTo {
				t.Fatalf("event %+v outside (%d, %d]", e, after, upTo)
			}
			if i > 0 && compareEvents(out[i-1], e) >= 0 {
				t.Fatalf("events out of order: %+v then %+v", out[i-1], e)
			}
		}
		for _, r := range rows {
			e := driver.Event{ID: r.ID, Time: r.Time, Delta: *r.Delta}
			if !slices.Contains(out, e) {
				t.Fatalf("row %+v is missing from %+v", e, out)
			}
		}
	})
}
