package abacus_test

import (
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
)

// GC drops a folded shard's tombstone on the embedded store once the shard
// expired more than twice GCGrace ago, and not one microsecond before
// (docs/architecture.md, "Purging the tombstones of folded shards").
func TestGCPurgesTombstonesOfShardsExpiredTwiceTheGraceAgo(t *testing.T) {
	t.Parallel()
	const lifetime, grace = time.Hour, time.Hour
	for _, c := range []struct {
		name   string
		after  time.Duration // from the first update to the second GC
		purged bool
	}{
		{"at the boundary", lifetime + 2*grace + time.Microsecond, false},
		{"a microsecond past it", lifetime + 2*grace + 2*time.Microsecond, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store := newMemStore(t)
			start := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
			clk := clock.NewManual(start)
			cl := startClient(t, abacus.Config{Driver: store, Clock: clk, GCInterval: -1,
				MutatorLifetime: lifetime, RefusalMargin: time.Minute, GCGrace: grace,
				Logger: slog.New(slog.DiscardHandler)})
			if err := cl.Add(ctx, "", "c", 5); err != nil {
				t.Fatal(err)
			}
			before, err := store.ReadShards(ctx, &driver.ReadShardsParams{Namespace: "default", Counter: "c"})
			if err != nil || len(before.Shards) != 1 {
				t.Fatalf("shards before GC = %+v, %v; want one", before, err)
			}
			shard := before.Shards[0]
			// The shard expires at start+lifetime; GC folds it a grace later
			// and leaves a tombstone one microsecond past its expiry.
			clk.Set(start.Add(lifetime + grace + time.Second))
			if _, err := cl.GCAll(ctx, ""); err != nil {
				t.Fatal(err)
			}
			clk.Set(start.Add(c.after))
			if _, err := cl.GCAll(ctx, ""); err != nil {
				t.Fatal(err)
			}
			if v, err := cl.Get(ctx, "", "c"); err != nil || v.Value != 5 {
				t.Fatalf("value after the purge = %+v, %v; want 5", v, err)
			}
			left, err := store.PurgeShardTombstones(ctx, math.MaxInt64)
			if err != nil {
				t.Fatal(err)
			}
			if purged := left == 0; purged != c.purged {
				t.Fatalf("%d tombstones left after GC at start+%v; want purged %v", left, c.after, c.purged)
			}

			// A write of the folded shard delayed past all that, now
			// unhidden, is counted by no read, and a collection that reads
			// the whole counter (any process's first) deletes it again,
			// though the counter is idle.
			late := &driver.WriteShardParams{Namespace: "default", Counter: "c", Shard: shard, Timestamp: shard.ExpiresAt - 1}
			if err := store.WriteShard(ctx, late); err != nil {
				t.Fatal(err)
			}
			if v, err := cl.Get(ctx, "", "c"); err != nil || v.Value != 5 {
				t.Fatalf("value with the shard written again = %+v, %v; want 5", v, err)
			}
			fresh := startClient(t, abacus.Config{Driver: store, Clock: clk, GCInterval: -1,
				MutatorLifetime: lifetime, RefusalMargin: time.Minute, GCGrace: grace,
				Logger: slog.New(slog.DiscardHandler)})
			if _, err := fresh.GCAll(ctx, ""); err != nil {
				t.Fatal(err)
			}
			for _, reader := range []*abacus.Client{cl, fresh} {
				if v, err := reader.Get(ctx, "", "c"); err != nil || v.Value != 5 {
					t.Fatalf("value after the collection = %+v, %v; want 5", v, err)
				}
			}
			after, err := store.ReadShards(ctx, &driver.ReadShardsParams{Namespace: "default", Counter: "c"})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range after.Shards {
				if s.ID == shard.ID {
					t.Fatalf("the late row of %s is still stored after the collection", s.ID)
				}
			}
		})
	}
}

// Left unset, GCGrace is the engine's default (24 h) for the purge too: a
// tombstone is not dropped in the sweep that folds its shard.
func TestThePurgeUsesTheDefaultGrace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := newMemStore(t)
	clk := clock.NewManual(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
	cl := startClient(t, abacus.Config{Driver: store, Clock: clk, GCInterval: -1, Logger: slog.New(slog.DiscardHandler)})
	if err := cl.Add(ctx, "", "c", 5); err != nil {
		t.Fatal(err)
	}
	clk.Advance(3 * 24 * time.Hour) // lifetime (24 h) and grace (24 h) passed, twice the grace not yet
	res, err := cl.GCAll(ctx, "")
	if err != nil || len(res) == 0 || res[0].Folded != 1 {
		t.Fatalf("GCAll = %+v, %v; want the shard folded", res, err)
	}
	if n, err := store.PurgeShardTombstones(ctx, math.MaxInt64); err != nil || n != 1 {
		t.Fatalf("%d tombstones left after the fold (%v); want 1: the purge waits twice the default grace", n, err)
	}
}
