package sharded_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/crdt"
	"github.com/abacusdb/abacus/internal/sharded"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Short durations keep the tests' clock arithmetic readable: a mutator lives
// 10 minutes, refuses in its last minute, and its shard is final 5 minutes
// after its death.
const (
	lifetime = 10 * time.Minute
	margin   = time.Minute
	grace    = 5 * time.Minute
)

type harness struct {
	store *faultyStore
	clk   *clock.Manual
	eng   *sharded.Engine
}

func newHarness(t *testing.T, tweak ...func(*sharded.Config)) *harness {
	t.Helper()
	h := &harness{store: &faultyStore{Shards: newStore(t)}, clk: clock.NewManual(t0)}
	cfg := sharded.Config{
		Store: h.store, Clock: h.clk,
		Lifetime: lifetime, RefusalMargin: margin, GCGrace: grace,
		WriteTimeout: 5 * time.Second,
	}
	for _, f := range tweak {
		f(&cfg)
	}
	eng, err := sharded.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.eng = eng
	t.Cleanup(func() { _ = eng.Close(context.Background()) })
	return h
}

func target(name string, k crdt.Kind) sharded.Target {
	return sharded.Target{Namespace: "ns", Counter: name, Kind: k}
}

func (h *harness) add(t *testing.T, tg sharded.Target, delta int64, id string) {
	t.Helper()
	if err := h.eng.Apply(context.Background(), tg, crdt.Op{Delta: delta}, id); err != nil {
		t.Fatalf("Apply(%d, %q): %v", delta, id, err)
	}
}

func (h *harness) value(t *testing.T, tg sharded.Target) (int64, int) {
	t.Helper()
	r, err := h.eng.Read(context.Background(), tg)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return r.State.Value(), r.Shards
}

func TestApplyReadEachType(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	cases := []struct {
		kind crdt.Kind
		ops  []crdt.Op
		want int64
	}{
		{crdt.KindSum, []crdt.Op{{Delta: 5}, {Delta: -2}, {Delta: 10}}, 13},
		{crdt.KindMax, []crdt.Op{{Delta: 5}, {Delta: -2}, {Delta: 10}, {Delta: 7}}, 10},
		{crdt.KindMin, []crdt.Op{{Delta: 5}, {Delta: -2}, {Delta: 10}}, -2},
		{crdt.KindDistinct, []crdt.Op{{Item: []byte("a")}, {Item: []byte("b")}, {Item: []byte("a")}}, 2},
	}
	for _, c := range cases {
		tg := target("c-"+c.kind.String(), c.kind)
		for _, op := range c.ops {
			if err := h.eng.Apply(ctx, tg, op, ""); err != nil {
				t.Fatalf("%v: Apply: %v", c.kind, err)
			}
		}
		if got, shards := h.value(t, tg); got != c.want || shards != 1 {
			t.Errorf("%v: value %d from %d shards, want %d from 1", c.kind, got, shards, c.want)
		}
	}
	r, err := h.eng.Read(ctx, target("never", crdt.KindMax))
	if err != nil || !r.State.Empty() || r.State.Value() != 0 {
		t.Fatalf("never-written counter: %+v, %v; want empty 0", r, err)
	}
}

func TestGroupCommitBatchesConcurrentUpdates(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.store.set(func(f *faultyStore) { f.delay = 20 * time.Millisecond })
	tg := target("hot", crdt.KindSum)
	const callers = 200
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- h.eng.Apply(context.Background(), tg, crdt.Op{Delta: int64(i + 1)}, "")
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := h.value(t, tg); got != callers*(callers+1)/2 {
		t.Fatalf("value %d, want %d", got, callers*(callers+1)/2)
	}
	// With one write in flight at a time, 200 updates cannot need anywhere
	// near 200 writes; a write per update would mean no group commit.
	if n := len(h.store.writeLog()); n >= callers/2 {
		t.Fatalf("%d shard writes for %d concurrent updates: not group-committed", n, callers)
	}
}

func TestAcknowledgedOnlyAfterWrite(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	gate, open := newGate(t)
	h.store.set(func(f *faultyStore) { f.gate = gate })
	done := make(chan error, 1)
	go func() {
		done <- h.eng.Apply(context.Background(), target("gated", crdt.KindSum), crdt.Op{Delta: 1}, "")
	}()
	select {
	case err := <-done:
		t.Fatalf("Apply returned %v before its shard write was allowed to happen", err)
	case <-time.After(100 * time.Millisecond):
	}
	open()
	if err := <-done; err != nil {
		t.Fatalf("Apply after the write: %v", err)
	}
}

func TestFailedWriteIsUnknownOutcomeNeverSuccess(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"fails before landing", "lands then times out"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			tg := target("c", crdt.KindSum)
			h.store.set(func(f *faultyStore) {
				if mode == "fails before landing" {
					f.failBefore = 1
				} else {
					f.failAfter = 1
				}
			})
			err := h.eng.Apply(context.Background(), tg, crdt.Op{Delta: 7}, "req-1")
			if !errors.Is(err, sharded.ErrUnknownOutcome) {
				t.Fatalf("Apply with a failing write: %v, want ErrUnknownOutcome", err)
			}
			// The retry with the same id reaches the same process: it must
			// end with the update counted exactly once, whatever happened.
			if err := h.eng.Apply(context.Background(), tg, crdt.Op{Delta: 7}, "req-1"); err != nil {
				t.Fatalf("retry: %v", err)
			}
			if got, _ := h.value(t, tg); got != 7 {
				t.Fatalf("value %d after unknown outcome + retry, want 7", got)
			}
		})
	}
}

func TestRetriesWithSameRequestIDCountOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tg := target("c", crdt.KindSum)
	for range 3 {
		h.add(t, tg, 5, "seq")
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h.eng.Apply(context.Background(), tg, crdt.Op{Delta: 100}, "conc"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got, _ := h.value(t, tg); got != 105 {
		t.Fatalf("value %d, want 105 (each request id once)", got)
	}
	if n := h.eng.Stats().Deduplicated.Load(); n != 21 {
		t.Errorf("deduplicated %d retries, want 21", n)
	}
	err := h.eng.Apply(context.Background(), tg, crdt.Op{Delta: 6}, "seq")
	if !errors.Is(err, sharded.ErrRequestConflict) {
		t.Fatalf("same id, different delta: %v, want ErrRequestConflict", err)
	}
	// The same id on another counter is a different request.
	h.add(t, target("other", crdt.KindSum), 5, "seq")
	if got, _ := h.value(t, target("other", crdt.KindSum)); got != 5 {
		t.Fatalf("other counter = %d, want 5", got)
	}
}

func TestRequestIDForgottenAfterWindow(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *sharded.Config) { c.DedupWindow = time.Minute })
	tg := target("c", crdt.KindSum)
	h.add(t, tg, 1, "r")
	h.clk.Advance(61 * time.Second)
	h.add(t, tg, 1, "r")
	// The documented limit: outside the window a retry is a new update.
	if got, _ := h.value(t, tg); got != 2 {
		t.Fatalf("value %d, want 2", got)
	}
}

func TestRefusalMarginRebirthsMutator(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tg := target("c", crdt.KindSum)
	h.add(t, tg, 1, "")
	h.clk.Advance(lifetime - margin - time.Second)
	h.add(t, tg, 1, "") // still the first mutator
	h.clk.Advance(2 * time.Second)
	h.add(t, tg, 1, "") // inside the margin: refused, a new mutator takes it
	got, shards := h.value(t, tg)
	if got != 3 || shards != 2 {
		t.Fatalf("value %d from %d shards, want 3 from 2", got, shards)
	}
	if n := h.eng.Stats().Births.Load(); n != 2 {
		t.Fatalf("%d births, want 2", n)
	}
}

func TestWriteTimestampsMonotonicAndBelowExpiry(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.store.set(func(f *faultyStore) { f.jitter = 3 * time.Millisecond })
	tg := target("c", crdt.KindSum)
	const updates = 60
	var wg sync.WaitGroup
	for i := range updates {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%15 == 0 {
				h.clk.Advance(-time.Second) // a clock stepping back must not reorder snapshots
			}
			if err := h.eng.Apply(context.Background(), tg, crdt.Op{Delta: 1}, ""); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// Pipelined writes may land in any order; what must hold is that a
	// higher timestamp always carries a newer (here: larger) state, so
	// last-write-wins keeps the newest snapshot.
	writes := h.store.writeLog()
	sort.Slice(writes, func(i, j int) bool { return writes[i].Timestamp < writes[j].Timestamp })
	var prevTS, prevVal int64 = -1, -1
	for _, w := range writes {
		if w.Timestamp >= w.Shard.ExpiresAt {
			t.Fatalf("write at %d is not below expires_at %d", w.Timestamp, w.Shard.ExpiresAt)
		}
		if w.Timestamp == prevTS {
			t.Fatalf("two writes share timestamp %d", w.Timestamp)
		}
		st, err := crdt.Decode(w.Shard.State)
		if err != nil {
			t.Fatal(err)
		}
		if st.Value() < prevVal {
			t.Fatalf("write at %d carries %d, older write carried %d", w.Timestamp, st.Value(), prevVal)
		}
		prevTS, prevVal = w.Timestamp, st.Value()
	}
	if got, _ := h.value(t, tg); got != updates {
		t.Fatalf("value %d, want %d", got, updates)
	}
}

// With writes pipelined, an older write can fail after a newer one that
// contains all its updates succeeded: those updates are durable and must be
// acknowledged, not reported as unknown.
func TestFailedOlderWriteCoveredByNewerIsAcknowledged(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	h := newHarness(t)
	var writes atomic.Int32
	h.store.set(func(f *faultyStore) {
		f.before = func() error {
			if writes.Add(1) == 1 {
				<-release
				return fmt.Errorf("injected: %w", driver.ErrUnknownOutcome)
			}
			return nil
		}
	})
	tg := target("c", crdt.KindSum)
	first := make(chan error, 1)
	go func() { first <- h.eng.Apply(context.Background(), tg, crdt.Op{Delta: 1}, "") }()
	for writes.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	h.add(t, tg, 2, "") // a second write, with both updates, succeeds
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("update covered by a newer successful write: %v, want acknowledged", err)
	}
	if got, _ := h.value(t, tg); got != 3 {
		t.Fatalf("value %d, want 3", got)
	}
}

func TestMutatorsAreBoundedLRU(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *sharded.Config) { c.MaxMutators = 2 })
	for i := range 5 {
		h.add(t, target(fmt.Sprint("c", i), crdt.KindSum), int64(i), "")
	}
	if n := h.eng.LiveMutators(); n > 2 {
		t.Fatalf("%d live mutators, bound is 2", n)
	}
	for i := range 5 {
		h.add(t, target(fmt.Sprint("c", i), crdt.KindSum), 10, "")
	}
	for i := range 5 {
		if got, _ := h.value(t, target(fmt.Sprint("c", i), crdt.KindSum)); got != int64(i)+10 {
			t.Fatalf("c%d = %d after eviction and rebirth, want %d", i, got, i+10)
		}
	}
}

// makeShards gives counter tg n shards by letting n mutators die one after
// another; it returns the expected sum.
func (h *harness) makeShards(t *testing.T, tg sharded.Target, n int) int64 {
	t.Helper()
	var sum int64
	for i := range n {
		h.add(t, tg, int64(i+1), "")
		sum += int64(i + 1)
		h.clk.Advance(lifetime - margin + time.Second)
	}
	return sum
}

func TestGCFoldsFinalShardsOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tg := target("c", crdt.KindSum)
	key := driver.CounterKey{Namespace: "ns", Counter: "c"}
	h.add(t, tg, 1, "")
	// Dead but inside the grace period: not final, nothing to fold.
	h.clk.Advance(lifetime + grace - time.Second)
	if res := h.eng.Collect(context.Background(), key); res.Folded != 0 || res.Skipped {
		t.Fatalf("premature collect: %+v", res)
	}
	h.add(t, tg, 2, "") // a new mutator's shard, alive
	h.clk.Advance(2 * time.Second)
	res := h.eng.Collect(context.Background(), key)
	if res.Skipped || res.Folded != 1 {
		t.Fatalf("collect: %+v, want exactly the one final shard folded", res)
	}
	if got, shards := h.value(t, tg); got != 3 || shards != 1 {
		t.Fatalf("after GC: %d from %d shards, want 3 from 1", got, shards)
	}
	h.clk.Advance(lifetime + grace)
	if res := h.eng.Collect(context.Background(), key); res.Folded != 1 {
		t.Fatalf("second collect: %+v", res)
	}
	h.add(t, tg, 100, "")
	if got, shards := h.value(t, tg); got != 103 || shards != 1 {
		t.Fatalf("after GC and a new update: %d from %d shards, want 103 from 1", got, shards)
	}
}

func TestGCRacingCollectors(t *testing.T) {
	t.Parallel()
	for _, racers := range []int{2, 5} {
		t.Run(fmt.Sprint(racers), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			tg := target("c", crdt.KindSum)
			want := h.makeShards(t, tg, 6)
			h.clk.Advance(lifetime + grace)
			var wg sync.WaitGroup
			for range racers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					h.eng.Collect(context.Background(), driver.CounterKey{Namespace: "ns", Counter: "c"})
				}()
			}
			wg.Wait()
			if got, shards := h.value(t, tg); got != want || shards != 0 {
				t.Fatalf("after %d racing GCs: %d from %d shards, want %d from 0", racers, got, shards, want)
			}
		})
	}
}

// Racing collectors that saw different prefixes of the final shards, with the
// smaller fold landing last (and replayed), still converge.
func TestGCStaleFoldLandsLate(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tg := target("c", crdt.KindSum)
	want := h.makeShards(t, tg, 4)
	ctx := context.Background()
	h.clk.Advance(lifetime + grace)
	set, err := h.store.ReadShards(ctx, &driver.ReadShardsParams{Namespace: "ns", Counter: "c", Consistency: driver.All})
	if err != nil {
		t.Fatal(err)
	}
	// The slow collector's cutoff lets only the first two shards be final.
	exp := make([]int64, 0, len(set.Shards))
	for _, s := range set.Shards {
		exp = append(exp, s.ExpiresAt)
	}
	var second int64
	for _, e := range exp {
		n := 0
		for _, o := range exp {
			if o <= e {
				n++
			}
		}
		if n == 2 {
			second = e
		}
	}
	small, err := sharded.PlanFold(set, second+1)
	if err != nil || len(small.Delete) != 2 {
		t.Fatalf("small plan: %+v, %v", small, err)
	}
	if res := h.eng.Collect(ctx, driver.CounterKey{Namespace: "ns", Counter: "c"}); res.Folded != 4 {
		t.Fatalf("fast collector: %+v", res)
	}
	tally, _ := small.Tally.MarshalBinary()
	for range 3 {
		if err := h.store.Fold(ctx, &driver.FoldParams{Namespace: "ns", Counter: "c", Delete: small.Delete,
			Tally: driver.Tally{State: tally, Timestamp: small.Timestamp}}); err != nil {
			t.Fatal(err)
		}
	}
	if got, shards := h.value(t, tg); got != want || shards != 0 {
		t.Fatalf("after a stale fold landed late: %d from %d shards, want %d from 0", got, shards, want)
	}
}

// A collection decides what is final by the time before its read. Here the
// read is slow: while it runs, the live shard gets another update and then
// time passes beyond its death and the grace. Judged by the time after the
// read, the shard would be final, and the fold would fold the state the read
// saw and delete the later update with it.
func TestGCCutoffIsTakenBeforeItsRead(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tg := target("c", crdt.KindSum)
	h.add(t, tg, 1, "")
	h.store.set(func(f *faultyStore) {
		f.afterAll = func() {
			f.set(func(f *faultyStore) { f.afterAll = nil })
			h.add(t, tg, 1, "") // lands after the read, in the same shard
			h.clk.Advance(lifetime + grace + time.Second)
		}
	})
	h.collect(t, 0)
	if got, _ := h.value(t, tg); got != 2 {
		t.Fatalf("after a collection whose read was slow: %d, want 2", got)
	}
	h.collect(t, 1)
	if got, shards := h.value(t, tg); got != 2 || shards != 0 {
		t.Fatalf("after the next collection: %d from %d shards, want 2 from 0", got, shards)
	}
}

func TestLateWriteFromDeadMutatorAfterFold(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tg := target("c", crdt.KindSum)
	want, writes := h.foldedShards(t, tg, 2)
	// Every write those mutators ever made arrives again, late (a replica
	// catching up, a delayed retry).
	for _, w := range writes {
		if err := h.store.Shards.WriteShard(context.Background(), &w); err != nil {
			t.Fatal(err)
		}
	}
	if got, shards := h.value(t, tg); got != want || shards != 0 {
		t.Fatalf("after late writes: %d from %d shards, want %d from 0 (a folded shard came back)", got, shards, want)
	}
}

func TestGCSkippedWhenReplicaDownReadStillWorks(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tg := target("c", crdt.KindSum)
	want := h.makeShards(t, tg, 3)
	h.clk.Advance(lifetime + grace)
	h.store.set(func(f *faultyStore) { f.allReadsErr = fmt.Errorf("one replica down: %w", driver.ErrUnavailable) })
	res := h.eng.Collect(context.Background(), driver.CounterKey{Namespace: "ns", Counter: "c"})
	if !res.Skipped || !errors.Is(res.Err, driver.ErrUnavailable) {
		t.Fatalf("collect with a replica down: %+v, want skipped with ErrUnavailable", res)
	}
	if got, shards := h.value(t, tg); got != want || shards != 3 {
		t.Fatalf("read with a replica down: %d from %d shards, want %d from 3", got, shards, want)
	}
	if n := h.eng.Stats().GCSkips.Load(); n < 1 {
		t.Fatalf("GC skips = %d, want at least 1", n)
	}
	h.store.set(func(f *faultyStore) { f.allReadsErr = nil })
	if res := h.eng.Collect(context.Background(), driver.CounterKey{Namespace: "ns", Counter: "c"}); res.Folded != 3 {
		t.Fatalf("collect after recovery: %+v", res)
	}
}

func TestReadTriggersGCWhenSeveralShardsFinal(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tg := target("c", crdt.KindSum)
	want := h.makeShards(t, tg, 3)
	h.clk.Advance(lifetime + grace)
	if got, _ := h.value(t, tg); got != want {
		t.Fatalf("value %d, want %d", got, want)
	}
	deadline := time.Now().Add(10 * time.Second)
	for h.eng.Stats().GCRuns.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a read that saw 3 final shards did not trigger a collection")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got, shards := h.value(t, tg); got != want || shards != 0 {
		t.Fatalf("after triggered GC: %d from %d shards, want %d from 0", got, shards, want)
	}
}

func TestCollectAll(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var want [3]int64
	for i := range want {
		want[i] = h.makeShards(t, target(fmt.Sprint("c", i), crdt.KindSum), 2)
	}
	h.clk.Advance(lifetime + grace)
	res, err := h.eng.CollectAll(context.Background(), "ns")
	if err != nil {
		t.Fatal(err)
	}
	folded := 0
	for _, r := range res {
		folded += r.Folded
	}
	if len(res) != 3 || folded != 6 {
		t.Fatalf("CollectAll: %d counters, %d folded; want 3 and 6", len(res), folded)
	}
	for i := range want {
		if got, shards := h.value(t, target(fmt.Sprint("c", i), crdt.KindSum)); got != want[i] || shards != 0 {
			t.Fatalf("c%d: %d from %d shards, want %d from 0", i, got, shards, want[i])
		}
	}
}

func TestCloseWaitsForInFlightWrites(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.store.set(func(f *faultyStore) { f.delay = 50 * time.Millisecond })
	tg := target("c", crdt.KindSum)
	var wg sync.WaitGroup
	var acked sync.Map
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if h.eng.Apply(context.Background(), tg, crdt.Op{Delta: 1}, "") == nil {
				acked.Store(i, true)
			}
		}()
	}
	time.Sleep(10 * time.Millisecond)
	if err := h.eng.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	n := 0
	acked.Range(func(any, any) bool { n++; return true })
	if got, _ := h.value(t, tg); got != int64(n) {
		t.Fatalf("value %d, but %d updates were acknowledged", got, n)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	store := newStore(t)
	bad := []sharded.Config{
		{},
		{Store: store, Lifetime: time.Hour, RefusalMargin: time.Hour},
		{Store: store, GCGrace: -time.Second},
		{Store: store, MaxMutators: -1},
	}
	for i, c := range bad {
		if _, err := sharded.New(c); err == nil {
			t.Errorf("config %d accepted: %+v", i, c)
		}
	}
}

func TestApplyAfterCloseIsNotApplied(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tg := target("c", crdt.KindSum)
	h.add(t, tg, 1, "")
	if err := h.eng.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := h.eng.Apply(context.Background(), tg, crdt.Op{Delta: 5}, "")
	if !errors.Is(err, sharded.ErrNotApplied) {
		t.Fatalf("Apply after Close: %v, want ErrNotApplied", err)
	}
	if got, _ := h.value(t, tg); got != 1 {
		t.Fatalf("value %d, want 1", got)
	}
}
