package embedded

import (
	"bytes"
	"fmt"

	"context"
	"errors"
	"slices"
	"testing"

	"github.com/abacusdb/abacus/driver"
)

// shardIDs reads a counter's live shard ids.
func shardIDs(t *testing.T, d *Driver, ns, counter string) []string {
	t.Helper()
	set, err := d.ReadShards(context.Background(), &driver.ReadShardsParams{Namespace: ns, Counter: counter})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range set.Shards {
		ids = append(ids, s.ID)
	}
	return ids
}

func TestPurgeShardTombstones(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openMem(t)
	mustWrite(t, d, "ns", "c", "old", []byte("o"), 1000, 100)
	mustWrite(t, d, "ns", "c", "live", []byte("l"), 2000, 100)
	mustWrite(t, d, "ns", "other", "old", []byte("x"), 1000, 100)
	for _, counter := range []string{"c", "other"} {
		err := d.Fold(ctx, &driver.FoldParams{Namespace: "ns", Counter: counter, Delete: []string{"old"},
			Tally: driver.Tally{State: []byte("t"), Timestamp: 1001}})
		if err != nil {
			t.Fatal(err)
		}
	}

	// Not one microsecond early: a tombstone at 1001 stays for before 1001,
	// and keeps hiding a late write below it.
	if n, err := d.PurgeShardTombstones(ctx, 1001); err != nil || n != 0 {
		t.Fatalf("purge below 1001 = %d, %v; want 0", n, err)
	}
	mustWrite(t, d, "ns", "c", "old", []byte("late"), 1000, 500)
	if ids := shardIDs(t, d, "ns", "c"); !slices.Equal(ids, []string{"live"}) {
		t.Fatalf("shards before the purge = %v, want [live]", ids)
	}

	// Below 1002 both tombstones go; live cells written earlier stay, and
	// so do the tallies.
	if n, err := d.PurgeShardTombstones(ctx, 1002); err != nil || n != 2 {
		t.Fatalf("purge below 1002 = %d, %v; want 2", n, err)
	}
	if ids := shardIDs(t, d, "ns", "c"); !slices.Equal(ids, []string{"live"}) {
		t.Fatalf("shards after the purge = %v, want [live]", ids)
	}
	set, err := d.ReadShards(ctx, &driver.ReadShardsParams{Namespace: "ns", Counter: "c"})
	if err != nil || set.Tally == nil || string(set.Tally.State) != "t" {
		t.Fatalf("tally after the purge = %+v, %v", set, err)
	}
	if n, err := d.PurgeShardTombstones(ctx, 1<<62); err != nil || n != 0 {
		t.Fatalf("second purge = %d, %v; want 0", n, err)
	}

	// What the purge gives up, and why the caller waits: a write of the
	// folded shard that arrives now is no longer hidden.
	mustWrite(t, d, "ns", "c", "old", []byte("late"), 1000, 500)
	if ids := shardIDs(t, d, "ns", "c"); !slices.Equal(ids, []string{"live", "old"}) {
		t.Fatalf("shards after a write past the purge = %v, want [live old]", ids)
	}
}

// More tombstones than one batch holds are all purged, and a cell that
// does not decode is left alone without stopping the purge.
func TestPurgeShardTombstonesInBatchesPastACorruptCell(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openMem(t)
	var ids []string
	for i := range purgeBatch*2 + 7 {
		id := string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
		ids = append(ids, id)
		mustWrite(t, d, "ns", "c", id, []byte("s"), 1000, 100)
	}
	if err := d.Fold(ctx, &driver.FoldParams{Namespace: "ns", Counter: "c", Delete: ids,
		Tally: driver.Tally{State: []byte("t"), Timestamp: 1001}}); err != nil {
		t.Fatal(err)
	}
	if err := d.db.Set(shardKey("ns", "c", "zzzz-corrupt"), []byte{0xff, 0xff}, nil); err != nil {
		t.Fatal(err)
	}
	n, err := d.PurgeShardTombstones(ctx, 2000)
	if err != nil || n != len(ids) {
		t.Fatalf("purge = %d, %v; want %d", n, err, len(ids))
	}
	_, closer, err := d.db.Get(shardKey("ns", "c", "zzzz-corrupt"))
	if err != nil {
		t.Fatalf("the corrupt cell was removed: %v", err)
	}
	_ = closer.Close()
}

func TestPurgeShardTombstonesOfAClosedStore(t *testing.T) {
	t.Parallel()
	d := openMem(t)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.PurgeShardTombstones(context.Background(), 1); !errors.Is(err, driver.ErrClosed) {
		t.Fatalf("purge of a closed store: %v, want ErrClosed", err)
	}
}

// A purge compacts the span it deleted from when it is small, so that the
// deleted keys leave the files; a compaction cut short is done by the next
// purge.
func TestAPurgeCompactsASmallSpan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := open(t, Config{Dir: t.TempDir(), NoSync: true})
	fold := func(counter string, n int) {
		t.Helper()
		var ids []string
		for i := range n {
			id := fmt.Sprintf("shard-%05d", i)
			ids = append(ids, id)
			mustWrite(t, d, "ns", counter, id, bytes.Repeat([]byte("s"), 200), 1000, 100)
		}
		if err := d.Fold(ctx, &driver.FoldParams{Namespace: "ns", Counter: counter, Delete: ids,
			Tally: driver.Tally{State: []byte("t"), Timestamp: 1001}}); err != nil {
			t.Fatal(err)
		}
	}
	fold("a", 50)
	compactions := d.db.Metrics().Compact.Count
	if n, err := d.PurgeShardTombstones(ctx, 2000); err != nil || n != 50 {
		t.Fatalf("purge = %d, %v", n, err)
	}
	if got := d.db.Metrics().Compact.Count; got <= compactions {
		t.Fatalf("%d compactions after the purge, %d before: nothing compacted", got, compactions)
	}
	if d.purged.n != 0 {
		t.Fatalf("%d deletes still wait for a compaction", d.purged.n)
	}

	// A compaction that fails leaves its span to the next purge.
	fold("b", 50)
	compact := d.compact
	d.compact = func(context.Context, []byte, []byte) error { return errors.New("disk full") }
	if n, err := d.PurgeShardTombstones(ctx, 2000); err == nil || n != 50 {
		t.Fatalf("purge with a failing compaction = %d, %v; want the 50 deleted and the failure reported", n, err)
	}
	if d.purged.n != 50 {
		t.Fatalf("%d deletes owed a compaction after it failed, want 50", d.purged.n)
	}
	var span [2][]byte
	d.compact = func(ctx context.Context, start, end []byte) error {
		span = [2][]byte{start, end}
		return compact(ctx, start, end)
	}
	if n, err := d.PurgeShardTombstones(ctx, 2000); err != nil || n != 0 || d.purged.n != 0 {
		t.Fatalf("the next purge = %d, %v, %d deletes still owed", n, err, d.purged.n)
	}
	if !bytes.Equal(span[0], shardKey("ns", "b", "shard-00000")) || !bytes.HasPrefix(span[1], shardKey("ns", "b", "shard-00049")) {
		t.Fatalf("the next purge compacted %x..%x, not the failed span", span[0], span[1])
	}
}
