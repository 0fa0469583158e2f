package cassandra_test

import (
	"strings"
	"testing"

	"github.com/abacusdb/abacus/driver"
)

// TestListEventCountersPaged lists more counters than fit a small page of
// SELECT DISTINCT on event_counters, a table with static columns, whose
// paging had bugs in early 2.1 releases.
func TestListEventCountersPaged(t *testing.T) {
	t.Parallel()
	d := sharedDriverOn(t, "listing") // TestListCounters lists another table
	ctx := ctxT(t)
	want := writeCounters(t, func(ns, c string, i int) error {
		if i%2 == 0 {
			return d.WriteRollup(ctx, &driver.WriteRollupParams{Namespace: ns, Counter: c, Rollup: driver.Rollup{Value: 1, Epoch: 5}})
		}
		return d.MarkEventBucket(ctx, &driver.MarkEventBucketParams{Namespace: ns, Counter: c, Bucket: 60})
	})
	checkListing(t, d, "ListEventCounters", d.ListEventCounters, "event_counters", want)
}

// TestEventsMalformedRows writes rows the driver never writes, as an
// operator with cqlsh could, and expects reads to refuse them.
func TestEventsMalformedRows(t *testing.T) {
	t.Parallel()
	d := sharedDriver(t)
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
