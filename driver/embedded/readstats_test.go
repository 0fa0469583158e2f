package embedded

import (
	"context"
	"fmt"
	"testing"

	"github.com/abacusdb/abacus/driver"
)

// A read under WithReadStats counts the rows it returned and the points
// Pebble stepped over for them: a folded shard's tombstone cell is read
// (and counted) but not returned, and a read without stats counts nothing.
func TestReadStatsCountWhatAReadStepsOver(t *testing.T) {
	d := openMem(t)
	ctx := context.Background()
	var ids []string
	for i := range 10 {
		id := fmt.Sprintf("s%02d", i)
		ids = append(ids, id)
		mustWrite(t, d, "ns", "c", id, []byte{byte(i)}, 1<<60, 100)
	}
	read := func() *ReadStats {
		t.Helper()
		st := &ReadStats{}
		set, err := d.ReadShards(WithReadStats(ctx, st), &driver.ReadShardsParams{Namespace: "ns", Counter: "c"})
		if err != nil {
			t.Fatal(err)
		}
		live := len(set.Shards)
		if set.Tally != nil {
			live++
		}
		if st.Reads != 1 || st.Live != live {
			t.Fatalf("stats %+v for a read of %d rows", st, live)
		}
		return st
	}
	if st := read(); st.Live != 10 || st.Tombstones != 0 || st.Points != 10 {
		t.Fatalf("10 live shards: %+v; want 10 live, no tombstone, 10 points", st)
	}
	mustFold(t, d, "ns", "c", ids[:6], []byte{1}, 200)
	// 4 shards and the tally returned; the 6 folded shards' tombstone
	// cells stepped over, each as two points until a compaction merges it
	// with the write it deletes.
	if st := read(); st.Live != 5 || st.Tombstones != 6 || st.Points != 17 {
		t.Fatalf("after a fold of 6: %+v; want 5 live, 6 tombstones, 17 points", st)
	}

	if _, err := d.ReadShards(ctx, &driver.ReadShardsParams{Namespace: "ns", Counter: "c"}); err != nil {
		t.Fatalf("a read without stats: %v", err)
	}
}

// Ledger and events reads count too.
func TestReadStatsOfLedgersAndEvents(t *testing.T) {
	d := openMem(t)
	ctx := context.Background()
	for i := range 3 {
		err := d.WriteLedgerRow(ctx, &driver.WriteLedgerRowParams{
			Namespace: "ns", Ledger: "l", Timestamp: 10,
			Row: driver.LedgerRow{Actor: fmt.Sprintf("a%d", i), State: []byte{1}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	st := &ReadStats{}
	if _, err := d.ReadLedger(WithReadStats(ctx, st), &driver.ReadLedgerParams{Namespace: "ns", Ledger: "l"}); err != nil {
		t.Fatal(err)
	}
	if st.Reads != 1 || st.Live != 3 || st.Points != 3 {
		t.Fatalf("a ledger of 3 rows: %+v", st)
	}

	for i := range 4 {
		if err := d.WriteEvent(ctx, &driver.WriteEventParams{
			Namespace: "ns", Counter: "e", Bucket: 1, Event: driver.Event{Time: int64(10 + i), ID: fmt.Sprintf("e%d", i), Delta: 1},
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.MarkEventBucket(ctx, &driver.MarkEventBucketParams{Namespace: "ns", Counter: "e", Bucket: 1}); err != nil {
		t.Fatal(err)
	}
	st = &ReadStats{}
	sctx := WithReadStats(ctx, st)
	if _, err := d.ReadEventCounter(sctx, &driver.ReadEventCounterParams{Namespace: "ns", Counter: "e"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ReadEvents(sctx, &driver.ReadEventsParams{Namespace: "ns", Counter: "e", Bucket: 1, After: 0, UpTo: 100}); err != nil {
		t.Fatal(err)
	}
	if st.Reads != 2 || st.Live != 5 || st.Tombstones != 0 || st.Points < 5 {
		t.Fatalf("a record with one marker and a bucket of 4 events: %+v", st)
	}

	// The bucket deleted up to its third event: the record's marker and
	// the bucket's deletion cell are tombstones, the last event is live.
	if err := d.DeleteEventBuckets(ctx, &driver.DeleteEventBucketsParams{Namespace: "ns", Counter: "e", Buckets: []int64{1}, Timestamp: 12}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		read func(context.Context) error
	}{
		{"the record", func(ctx context.Context) error {
			_, err := d.ReadEventCounter(ctx, &driver.ReadEventCounterParams{Namespace: "ns", Counter: "e"})
			return err
		}},
		{"the bucket", func(ctx context.Context) error {
			_, err := d.ReadEvents(ctx, &driver.ReadEventsParams{Namespace: "ns", Counter: "e", Bucket: 1, After: 0, UpTo: 100})
			return err
		}},
	} {
		st := &ReadStats{}
		if err := c.read(WithReadStats(ctx, st)); err != nil {
			t.Fatal(err)
		}
		if st.Reads != 1 || st.Tombstones != 1 || st.Points < st.Live+1 {
			t.Errorf("%s after the bucket's delete: %+v, want one tombstone", c.what, st)
		}
	}
}

// A read that fails adds nothing: here a shard cell that does not decode.
func TestReadStatsOfAFailedRead(t *testing.T) {
	d := openMem(t)
	ctx := context.Background()
	mustWrite(t, d, "ns", "c", "s1", []byte{1}, 1<<60, 100)
	if err := d.db.Set(shardKey("ns", "c", "s2"), []byte{0xff}, nil); err != nil {
		t.Fatal(err)
	}
	st := &ReadStats{}
	if _, err := d.ReadShards(WithReadStats(ctx, st), &driver.ReadShardsParams{Namespace: "ns", Counter: "c"}); err == nil {
		t.Fatal("a read over a cell that does not decode succeeded")
	}
	if st.Reads != 0 || st.Live != 0 || st.Points != 0 {
		t.Fatalf("a failed read added %+v", st)
	}
}
