package cassandra_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/abacusdb/abacus/driver"
)

// TestListEventCountersPaged lists more counters than fit a small page of
// SELECT DISTINCT on event_counters, a table with static columns, whose
// paging had bugs in early 2.1 releases.
func TestListEventCountersPaged(t *testing.T) {
	t.Parallel()
	d := open(t, testConfig(t))
	ctx := ctxT(t)
	var want []driver.CounterKey
	for _, ns := range []string{"a", "b"} {
		for i := range 30 {
			c := fmt.Sprintf("c%02d", i)
			want = append(want, driver.CounterKey{Namespace: ns, Counter: c})
			var err error
			if i%2 == 0 {
				err = d.WriteRollup(ctx, &driver.WriteRollupParams{Namespace: ns, Counter: c, Rollup: driver.Rollup{Value: 1, Epoch: 5}})
			} else {
				err = d.MarkEventBucket(ctx, &driver.MarkEventBucketParams{Namespace: ns, Counter: c, Bucket: 60})
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := d.ListEventCounters(ctx, &driver.ListCountersParams{})
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ListEventCounters = %v, %v\nwant %v", got, err, want)
	}
	got, err = d.ListEventCounters(ctx, &driver.ListCountersParams{Namespace: "b"})
	if err != nil || !reflect.DeepEqual(got, want[30:]) {
		t.Fatalf("ListEventCounters(b) = %v, %v\nwant %v", got, err, want[30:])
	}
	iter := d.Session().Query("SELECT DISTINCT ns, counter FROM " + d.Keyspace() + ".event_counters").
		PageSize(7).IterContext(ctx)
	seen := map[string]bool{}
	var ns, c string
	for iter.Scan(&ns, &c) {
		seen[ns+"/"+c] = true
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 60 {
		t.Errorf("paged DISTINCT saw %d keys, want 60", len(seen))
	}
}

// TestEventsMalformedRows writes rows the driver never writes, as an
// operator with cqlsh could, and expects reads to refuse them.
func TestEventsMalformedRows(t *testing.T) {
	t.Parallel()
	d := open(t, testConfig(t))
	ctx := ctxT(t)
	exec := rawExec(t, ctx)
	ks := d.Keyspace()
	exec("UPDATE "+ks+".event_counters SET marked = false WHERE ns = ? AND counter = ? AND bucket = ?", "ns", "unmarked", int64(60))
	exec("UPDATE "+ks+".event_counters SET rollup_value = ? WHERE ns = ? AND counter = ?", int64(3), "ns", "no-epoch")
	exec("INSERT INTO "+ks+".event_counters (ns, counter, bucket) VALUES (?, ?, ?)", "ns", "row-marker-only", int64(60))
	for _, c := range []string{"unmarked", "no-epoch", "row-marker-only"} {
		_, err := d.ReadEventCounter(ctx, &driver.ReadEventCounterParams{Namespace: "ns", Counter: c})
		if err == nil || !strings.Contains(err.Error(), "malformed row") {
			t.Errorf("ReadEventCounter(%s): %v, want a malformed row error", c, err)
		}
	}
	exec("INSERT INTO "+ks+".events (ns, counter, bucket, time, id) VALUES (?, ?, ?, ?, ?)", "ns", "no-delta", int64(60), int64(61), "r")
	_, err := d.ReadEvents(ctx, &driver.ReadEventsParams{Namespace: "ns", Counter: "no-delta", Bucket: 60, After: 0, UpTo: 100})
	if err == nil || !strings.Contains(err.Error(), "malformed row") {
		t.Errorf("ReadEvents of an event without a delta: %v, want a malformed row error", err)
	}
}
