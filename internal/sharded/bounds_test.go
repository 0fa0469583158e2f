package sharded_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/crdt"
	"github.com/abacusdb/abacus/internal/randomid"
	"github.com/abacusdb/abacus/internal/sharded"
)

var cKey = driver.CounterKey{Namespace: "ns", Counter: "c"}

// storedShards reads everything stored for ns/c, unbounded, past the engine.
func storedShards(t *testing.T, s driver.Shards) *driver.ShardSet {
	t.Helper()
	set, err := s.ReadShards(context.Background(), &driver.ReadShardsParams{Namespace: "ns", Counter: "c"})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// After a fold, the second read of a counter starts above every folded
// shard, so it never meets their tombstones, and still counts everything.
func TestReadsAfterAFoldSkipFoldedShards(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tg := target("c", crdt.KindSum)
	want := h.makeShards(t, tg, 6)
	var folded []string
	for _, w := range h.store.writeLog() {
		folded = append(folded, w.Shard.ID)
	}
	h.clk.Advance(lifetime + grace)
	h.collect(t, 6)
	live := h.add2(t, tg, 100) // a live shard after the fold
	want += 100

	before := h.eng.Stats().UnboundedReads.Load()
	if got, shards := h.value(t, tg); got != want || shards != 1 {
		t.Fatalf("first read: %d from %d shards, want %d from 1", got, shards, want)
	}
	if n := h.eng.Stats().UnboundedReads.Load() - before; n != 1 {
		t.Fatalf("the first read after the fold read %d whole partitions, want 1 (no tally known yet)", n)
	}
	for range 3 {
		if got, shards := h.value(t, tg); got != want || shards != 1 {
			t.Fatalf("bounded read: %d from %d shards, want %d from 1", got, shards, want)
		}
		from := h.store.lastFrom()
		for _, id := range folded {
			if id >= from {
				t.Fatalf("bound %q does not skip folded shard %q", from, id)
			}
		}
		if live < from {
			t.Fatalf("bound %q skips live shard %q", from, live)
		}
	}
	if n := h.eng.Stats().UnboundedReads.Load() - before; n != 1 {
		t.Fatalf("later reads read %d more whole partitions, want none", n-1)
	}
	// The anchor, which makes bounded reads find a row on Cassandra, is
	// stored but never counted as a shard.
	if set := storedShards(t, h.store.Shards); len(set.Shards) != 2 || !strings.HasPrefix(set.Shards[1].ID, "~") {
		t.Fatalf("stored shards %+v, want the live shard and the anchor", set.Shards)
	}
}

// collect runs one collection of ns/c and fails unless it folds want
// shards.
func (h *harness) collect(t *testing.T, want int) {
	t.Helper()
	if res := h.eng.Collect(context.Background(), cKey); res.Skipped || res.Folded != want {
		t.Fatalf("collect: %+v, want %d shards folded", res, want)
	}
}

// foldedShards gives tg n shards, lets them become final and folds them;
// it returns the expected value and every shard write made.
func (h *harness) foldedShards(t *testing.T, tg sharded.Target, n int) (int64, []driver.WriteShardParams) {
	t.Helper()
	want := h.makeShards(t, tg, n)
	writes := h.store.writeLog()
	h.clk.Advance(lifetime + grace)
	h.collect(t, n)
	return want, writes
}

// add2 adds delta to tg and returns the id of the shard that holds it.
func (h *harness) add2(t *testing.T, tg sharded.Target, delta int64) string {
	t.Helper()
	h.add(t, tg, delta, "")
	log := h.store.writeLog()
	return log[len(log)-1].Shard.ID
}

// A bounded read is used only when it carries a tally at least as new as the
// one the bound came from; otherwise the engine reads the whole partition.
// Cassandra answers a bounded read above every row with nothing at all (its
// static tally comes only with a row), and a replica behind answers with an
// older tally.
func TestUntrustedBoundedReadsAreReadAgainInFull(t *testing.T) {
	t.Parallel()
	for name, rewrite := range map[string]func(*driver.ShardSet) *driver.ShardSet{
		"no row": func(*driver.ShardSet) *driver.ShardSet { return &driver.ShardSet{} },
		"older tally": func(s *driver.ShardSet) *driver.ShardSet {
			old := *s.Tally
			old.Timestamp--
			return &driver.ShardSet{Tally: &old, Shards: s.Shards}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			tg := target("c", crdt.KindSum)
			want := h.makeShards(t, tg, 3)
			h.clk.Advance(lifetime + grace)
			h.collect(t, 3)
			h.value(t, tg) // learns the bound
			h.store.set(func(f *faultyStore) { f.bounded = rewrite })
			before := h.eng.Stats().UnboundedReads.Load()
			if got, _ := h.value(t, tg); got != want {
				t.Fatalf("read = %d, want %d", got, want)
			}
			if n := h.eng.Stats().UnboundedReads.Load() - before; n != 1 {
				t.Fatalf("%d whole-partition reads after an untrusted bounded read, want 1", n)
			}
		})
	}
}

// Shards of earlier releases have random ids, which sort above every bound:
// bounded reads keep counting them, and GC folds them by expiry as usual.
func TestShardsOfEarlierReleasesAreStillRead(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tg := target("c", crdt.KindSum)
	seven := &crdt.Sum{}
	if err := seven.Apply(crdt.Op{Delta: 7}); err != nil {
		t.Fatal(err)
	}
	raw, _ := seven.MarshalBinary()
	old := driver.Shard{ID: randomid.Hex(16), State: raw, ExpiresAt: t0.Add(3 * lifetime).UnixMicro()}
	err := h.store.Shards.WriteShard(context.Background(), &driver.WriteShardParams{
		Namespace: "ns", Counter: "c", Shard: old, Timestamp: t0.UnixMicro(),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := 7 + h.makeShards(t, tg, 2)
	h.clk.Advance(lifetime + grace)
	if res := h.eng.Collect(context.Background(), cKey); res.Folded != 2 {
		t.Fatalf("collect: %+v, want the two new shards folded and the old one alive", res)
	}
	for range 2 {
		if got, shards := h.value(t, tg); got != want || shards != 1 {
			t.Fatalf("read: %d from %d shards, want %d from 1 (the old shard)", got, shards, want)
		}
	}
	if from := h.store.lastFrom(); from == "" || old.ID < from {
		t.Fatalf("last read's bound %q would skip the old shard %q", from, old.ID)
	}
	h.clk.Advance(3*lifetime + grace)
	if res := h.eng.Collect(context.Background(), cKey); res.Folded != 1 {
		t.Fatalf("collect of the old shard: %+v", res)
	}
	if got, shards := h.value(t, tg); got != want || shards != 0 {
		t.Fatalf("after folding the old shard: %d from %d shards, want %d from 0", got, shards, want)
	}
}

// Several processes write, collect and read one counter in random order,
// each with its own remembered bounds, which fall behind while the others
// fold. Every read must equal the sum of the acknowledged updates, and
// every fold must leave the shards it did not fold at or above the bound
// its tally gives. (The embedded store always answers with its newest
// tally; the untrusted answers of a replica behind are
// TestUntrustedBoundedReadsAreReadAgainInFull's, overflowing runs
// TestFoldPlans' and abacus.TestShardedSumAcrossProcessesStaysReadable's.)
func TestBoundedReadsAcrossProcesses(t *testing.T) {
	t.Parallel()
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 7))
			store := &faultyStore{Shards: newStore(t)}
			clk := clock.NewManual(t0)
			var procs []*sharded.Engine
			for range 3 {
				e, err := sharded.New(sharded.Config{Store: store, Clock: clk,
					Lifetime: lifetime, RefusalMargin: margin, GCGrace: grace, WriteTimeout: 5 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = e.Close(context.Background()) })
				procs = append(procs, e)
			}
			tg := target("c", crdt.KindSum)
			ctx := context.Background()
			var want int64
			for step := range 300 {
				e := procs[rng.IntN(len(procs))]
				clk.Advance(time.Duration(rng.IntN(int(lifetime / 4))))
				switch op := rng.IntN(6); {
				case op < 3:
					d := rng.Int64N(1000) - 300
					if err := e.Apply(ctx, tg, crdt.Op{Delta: d}, ""); err != nil {
						t.Fatalf("step %d: Apply: %v", step, err)
					}
					want += d
				case op == 3:
					if res := e.Collect(ctx, cKey); res.Skipped {
						t.Fatalf("step %d: collect skipped: %v", step, res.Err)
					}
					set := storedShards(t, store.Shards)
					if set.Tally != nil {
						// The bound as docs/architecture.md defines it,
						// spelled out here rather than taken from the code.
						bound := fmt.Sprintf("-%016x-%016x", set.Tally.Timestamp, 0)
						for _, s := range set.Shards {
							if s.ID < bound {
								t.Fatalf("step %d: live shard %s (expires %d) below the bound %s", step, s.ID, s.ExpiresAt, bound)
							}
						}
					}
				default:
					r, err := e.Read(ctx, tg)
					if err != nil {
						t.Fatalf("step %d: Read: %v", step, err)
					}
					if r.Value != want {
						t.Fatalf("step %d: read %d, want %d", step, r.Value, want)
					}
				}
			}
		})
	}
}

// A live row of a shard that expires before the tally's timestamp is one
// the tally already holds: a fold's delete that missed this replica (read
// repair of a bounded read can bring it the tally alone), or a row back
// from the dead after its tombstone was dropped unrepaired. Neither a
// whole-partition read nor a bounded one counts it again.
func TestRowsOfFoldedShardsAreNotCountedAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tg := target("c", crdt.KindSum)
	want, writes := h.foldedShards(t, tg, 3)
	tally := storedShards(t, h.store.Shards).Tally
	// The last write of each folded shard comes back live, above the
	// fold's timestamp, as a row whose tombstone is gone would.
	for _, w := range writes {
		w.Timestamp = tally.Timestamp + 1
		if err := h.store.Shards.WriteShard(context.Background(), &w); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(storedShards(t, h.store.Shards).Shards); n < 3 {
		t.Fatalf("%d live rows stored, want the 3 folded shards back (and the anchor)", n)
	}
	for _, what := range []string{"whole-partition read", "bounded read"} {
		if got, shards := h.value(t, tg); got != want || shards != 0 {
			t.Fatalf("%s: %d from %d shards, want %d from 0", what, got, shards, want)
		}
	}
	if n := h.eng.Stats().StaleShards.Load(); n != 3 {
		t.Fatalf("StaleShards = %d, want 3 (the whole-partition read saw them; the bounded one skipped them)", n)
	}
	// The next fold deletes them.
	h.add(t, tg, 5, "")
	want += 5
	h.clk.Advance(lifetime + grace + time.Second)
	h.collect(t, 1)
	noneStored(t, storedShards(t, h.store.Shards), writes, "after the next fold")
	if got, _ := h.value(t, tg); got != want {
		t.Fatalf("after the next fold: %d, want %d", got, want)
	}
}

// noneStored fails the test if set holds a live row of a shard that writes
// wrote.
func noneStored(t *testing.T, set *driver.ShardSet, writes []driver.WriteShardParams, when string) {
	t.Helper()
	for _, s := range set.Shards {
		for _, w := range writes {
			if s.ID == w.Shard.ID {
				t.Fatalf("stale row %s still stored %s", s.ID, when)
			}
		}
	}
}

// Rows the tally already holds on a counter that no longer changes are
// deleted by the next collection that sees them, though it folds nothing:
// a row back after its tombstone was purged would otherwise stay for good.
func TestAnIdleCountersStaleRowsAreDeleted(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tg := target("c", crdt.KindSum)
	want, writes := h.foldedShards(t, tg, 2)
	before := storedShards(t, h.store.Shards).Tally
	// The tombstones go (as a purge drops them), then the shards' last
	// writes land again, at their own timestamps, below the fold's.
	purger, ok := h.store.Shards.(driver.ShardTombstonePurger)
	if !ok {
		t.Fatalf("the test store (%T) cannot purge tombstones", h.store.Shards)
	}
	if n, err := purger.PurgeShardTombstones(context.Background(), math.MaxInt64); err != nil || n != 2 {
		t.Fatalf("purge = %d, %v; want the 2 tombstones", n, err)
	}
	for _, w := range writes {
		if err := h.store.Shards.WriteShard(context.Background(), &w); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(storedShards(t, h.store.Shards).Shards); n < 2 {
		t.Fatalf("%d live rows stored, want the 2 folded shards back", n)
	}
	if got, shards := h.value(t, tg); got != want || shards != 0 {
		t.Fatalf("read %d from %d shards, want %d from 0", got, shards, want)
	}
	h.collect(t, 0)
	set := storedShards(t, h.store.Shards)
	noneStored(t, set, writes, "after a collection")
	if set.Tally == nil || set.Tally.Timestamp != before.Timestamp || string(set.Tally.State) != string(before.State) {
		t.Fatalf("tally changed from %+v to %+v; deleting stale rows must leave it as it is", before, set.Tally)
	}
	if got, _ := h.value(t, tg); got != want {
		t.Fatalf("after the collection: %d, want %d", got, want)
	}
}

// A tally written by an earlier release may have skipped a shard that
// overflowed it and folded later ones, so its timestamp can pass a shard it
// does not hold. Such shards have ids of the earlier layout: reads keep
// counting them whatever they expire, and GC folds them.
func TestShardsAnEarlierTallySkippedAreStillCounted(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tg := target("c", crdt.KindSum)
	ctx := context.Background()
	state := func(v int64) []byte {
		s := &crdt.Sum{}
		if err := s.Apply(crdt.Op{Delta: v}); err != nil {
			t.Fatal(err)
		}
		raw, _ := s.MarshalBinary()
		return raw
	}
	e1, e2 := t0.UnixMicro(), t0.Add(time.Minute).UnixMicro()
	skipped := driver.Shard{ID: randomid.Hex(16), State: state(7), ExpiresAt: e1}
	if err := h.store.Shards.WriteShard(ctx, &driver.WriteShardParams{Namespace: "ns", Counter: "c", Shard: skipped, Timestamp: e1 - 1}); err != nil {
		t.Fatal(err)
	}
	// The earlier release's fold: a tally of 5 past both, no anchor.
	if err := h.store.Shards.Fold(ctx, &driver.FoldParams{Namespace: "ns", Counter: "c",
		Tally: driver.Tally{State: state(5), Timestamp: e2 + 1}}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // whole-partition, then bounded
		if got, shards := h.value(t, tg); got != 12 || shards != 1 {
			t.Fatalf("read: %d from %d shards, want 12 from 1", got, shards)
		}
	}
	h.clk.Advance(lifetime + grace)
	h.collect(t, 1)
	if got, shards := h.value(t, tg); got != 12 || shards != 0 {
		t.Fatalf("after GC: %d from %d shards, want 12 from 0", got, shards)
	}
}

// A whole-partition read that finds no tally (a store restored from before
// the counter's first fold) forgets the bound, so later reads do not try a
// bounded read first every time.
func TestABoundIsForgottenWhenTheTallyIsGone(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tg := target("c", crdt.KindSum)
	h.foldedShards(t, tg, 2)
	h.value(t, tg)
	h.value(t, tg)
	if from := h.store.lastFrom(); from == "" {
		t.Fatal("the second read after the fold was not bounded")
	}
	h.store.set(func(f *faultyStore) { f.Shards = newStore(t) }) // the restored, empty store
	h.value(t, tg)
	before := h.eng.Stats().UnboundedReads.Load()
	h.value(t, tg)
	if from := h.store.lastFrom(); from != "" || h.eng.Stats().UnboundedReads.Load() != before+1 {
		t.Fatalf("after a read found no tally, the next read still started at %q", from)
	}
}
