package drivertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/randomid"
)

// Opener opens the driver under test. Exercise may call it more than once;
// every call must return a new handle (to the same store or a fresh one) that
// the suite closes itself.
type Opener func(t *testing.T) driver.Driver

// Exercise runs the whole conformance suite against the driver.
func Exercise(t *testing.T, open Opener) {
	d := open(t)
	t.Cleanup(func() { _ = d.Close() })

	t.Run("Namespaces", func(t *testing.T) { exerciseNamespaces(t, d) })
	t.Run("APIKeys", func(t *testing.T) { exerciseAPIKeys(t, d) })
	t.Run("Ledgers", func(t *testing.T) { exerciseLedgers(t, d, open) })
	t.Run("LedgerEntries", func(t *testing.T) { exerciseLedgerEntries(t, d) })
	t.Run("LedgerRights", func(t *testing.T) { exerciseLedgerRights(t, d, open) })
	t.Run("LedgerBase", func(t *testing.T) { exerciseLedgerBase(t, d, open) })
	t.Run("Shards", func(t *testing.T) { exerciseShards(t, d) })
	t.Run("ShardBatches", func(t *testing.T) { exerciseShardBatches(t, d) })
	t.Run("Fold", func(t *testing.T) { exerciseFold(t, d) })
	t.Run("BoundedReads", func(t *testing.T) { exerciseBoundedReads(t, d) })
	t.Run("ListCounters", func(t *testing.T) { exerciseListCounters(t, d) })
	t.Run("ModelLists", func(t *testing.T) { exerciseModelLists(t, d) })
	t.Run("Lifecycle", func(t *testing.T) { exerciseLifecycle(t, d) })
	t.Run("Queues", func(t *testing.T) { exerciseQueues(t, d, open) })
	t.Run("Actors", func(t *testing.T) { exerciseActors(t, d, open) })
	t.Run("NativeCounters", func(t *testing.T) { exerciseNative(t, d, open) })
	t.Run("CASCounters", func(t *testing.T) { exerciseCAS(t, d, open) })
	t.Run("Events", func(t *testing.T) {
		exerciseEvents(t, d, open)
	})
	t.Run("Closed", func(t *testing.T) {
		d2 := openClosed(t, open)
		_, err := d2.ReadShards(context.Background(), &driver.ReadShardsParams{Namespace: "x", Counter: "y"})
		if !errors.Is(err, driver.ErrClosed) {
			t.Fatalf("ReadShards after Close: got %v, want ErrClosed", err)
		}
		err = d2.WriteShard(context.Background(), &driver.WriteShardParams{
			Namespace: "x", Counter: "y", Timestamp: 1,
			Shard: driver.Shard{ID: "m", State: []byte{1}, ExpiresAt: 10},
		})
		if !errors.Is(err, driver.ErrClosed) {
			t.Fatalf("WriteShard after Close: got %v, want ErrClosed", err)
		}
		err = d2.WriteShards(context.Background(), []driver.WriteShardParams{{
			Namespace: "x", Counter: "y", Timestamp: 1,
			Shard: driver.Shard{ID: "m", State: []byte{1}, ExpiresAt: 10},
		}})
		if !errors.Is(err, driver.ErrClosed) {
			t.Fatalf("WriteShards after Close: got %v, want ErrClosed", err)
		}
	})
}

// unique returns a name no other subtest or earlier run uses.
func unique(prefix string) string {
	return prefix + "-" + randomid.Hex(6)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func exerciseNamespaces(t *testing.T, d driver.Driver) {
	t.Run("CreateGetRoundTrip", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		want := driver.Namespace{
			Name:             unique("ns-roundtrip"),
			Model:            "sharded",
			Type:             "max",
			ReadConsistency:  driver.One,
			WriteConsistency: driver.Quorum,
			Retention:        36 * time.Hour,
			Options:          map[string]string{"history_length": "10", "strict": "true"},
			CreatedAt:        time.UnixMilli(1_700_000_000_123).UTC(),
		}
		if err := d.CreateNamespace(c, &driver.CreateNamespaceParams{Namespace: want}); err != nil {
			t.Fatalf("CreateNamespace: %v", err)
		}
		got, err := d.GetNamespace(c, &driver.GetNamespaceParams{Name: want.Name})
		if err != nil {
			t.Fatalf("GetNamespace: %v", err)
		}
		wantRecord(t, "GetNamespace", got, &got.CreatedAt, want, want.CreatedAt)
	})

	t.Run("EmptyOptions", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		ns := driver.Namespace{Name: unique("ns-noopts"), Model: "events", CreatedAt: time.UnixMilli(1).UTC()}
		if err := d.CreateNamespace(c, &driver.CreateNamespaceParams{Namespace: ns}); err != nil {
			t.Fatalf("CreateNamespace: %v", err)
		}
		got, err := d.GetNamespace(c, &driver.GetNamespaceParams{Name: ns.Name})
		if err != nil {
			t.Fatalf("GetNamespace: %v", err)
		}
		if len(got.Options) != 0 || got.Type != "" || got.Retention != 0 {
			t.Errorf("GetNamespace = %+v, want empty options, type and retention", *got)
		}
	})

	t.Run("CreateExistingKeepsFirst", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		name := unique("ns-exists")
		first := driver.Namespace{Name: name, Model: "sharded", Type: "sum", CreatedAt: time.UnixMilli(1000).UTC()}
		second := driver.Namespace{Name: name, Model: "ledger", Type: "", CreatedAt: time.UnixMilli(2000).UTC()}
		if err := d.CreateNamespace(c, &driver.CreateNamespaceParams{Namespace: first}); err != nil {
			t.Fatalf("first CreateNamespace: %v", err)
		}
		err := d.CreateNamespace(c, &driver.CreateNamespaceParams{Namespace: second})
		if !errors.Is(err, driver.ErrExists) {
			t.Fatalf("second CreateNamespace: got %v, want ErrExists", err)
		}
		got, err := d.GetNamespace(c, &driver.GetNamespaceParams{Name: name})
		if err != nil {
			t.Fatalf("GetNamespace: %v", err)
		}
		if got.Model != "sharded" || got.Type != "sum" {
			t.Errorf("namespace was overwritten: %+v", *got)
		}
	})

	t.Run("RacingCreatesOneWinner", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		name := unique("ns-race")
		const racers = 5
		errs := race(racers, func(i int) error {
			return d.CreateNamespace(c, &driver.CreateNamespaceParams{Namespace: driver.Namespace{
				Name: name, Model: "sharded", Type: fmt.Sprint("t", i), CreatedAt: time.UnixMilli(int64(i)).UTC(),
			}})
		})
		winners := 0
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil:
				winners++
				winner = i
			case errors.Is(err, driver.ErrExists):
			default:
				t.Errorf("racer %d: unexpected error %v", i, err)
			}
		}
		if winners != 1 {
			t.Fatalf("%d racers created the namespace, want exactly 1 (errors %v)", winners, errs)
		}
		got, err := d.GetNamespace(c, &driver.GetNamespaceParams{Name: name})
		if err != nil {
			t.Fatalf("GetNamespace: %v", err)
		}
		if want := fmt.Sprint("t", winner); got.Type != want {
			t.Errorf("stored type %q, want the winner's %q", got.Type, want)
		}
	})

	t.Run("GetMissing", func(t *testing.T) {
		t.Parallel()
		_, err := d.GetNamespace(ctx(t), &driver.GetNamespaceParams{Name: unique("ns-missing")})
		if !errors.Is(err, driver.ErrNotFound) {
			t.Fatalf("GetNamespace of a missing name: got %v, want ErrNotFound", err)
		}
	})

	t.Run("ListSorted", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		base := unique("ns-list")
		names := []string{base + "-c", base + "-a", base + "-b"}
		for _, n := range names {
			if err := d.CreateNamespace(c, &driver.CreateNamespaceParams{Namespace: driver.Namespace{Name: n, Model: "sharded", Type: "sum", CreatedAt: time.UnixMilli(5).UTC()}}); err != nil {
				t.Fatalf("CreateNamespace(%s): %v", n, err)
			}
		}
		list, err := d.ListNamespaces(c, &driver.ListNamespacesParams{})
		if err != nil {
			t.Fatalf("ListNamespaces: %v", err)
		}
		var mine []string
		for i, ns := range list {
			if i > 0 && list[i-1].Name >= ns.Name {
				t.Errorf("list not sorted by name: %q before %q", list[i-1].Name, ns.Name)
			}
			if strings.HasPrefix(ns.Name, base) {
				mine = append(mine, ns.Name)
			}
		}
		want := []string{base + "-a", base + "-b", base + "-c"}
		if !reflect.DeepEqual(mine, want) {
			t.Errorf("listed %v, want %v", mine, want)
		}
	})
}

// counter returns a fresh counter key for one subtest.
func counter(prefix string) driver.CounterKey {
	return driver.CounterKey{Namespace: unique("ns-" + prefix), Counter: unique("c")}
}

// wantRecord checks got, a record read back by the call get, against want,
// the one created: their CreatedAt (gotAt, wantAt) as the same instant,
// since a store may return it in another location, the rest as equal.
func wantRecord[R any](t *testing.T, get string, got *R, gotAt *time.Time, want R, wantAt time.Time) {
	t.Helper()
	if !gotAt.Equal(wantAt) {
		t.Errorf("CreatedAt = %v, want %v", *gotAt, wantAt)
	}
	*gotAt = wantAt
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("%s = %+v, want %+v", get, *got, want)
	}
}

// race runs f(0) to f(n-1) at once, each in a goroutine of its own, and
// returns their errors by racer.
func race(n int, f func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	return errs
}

// openClosed opens a driver of its own and closes it, for checking that
// calls after Close fail with ErrClosed.
func openClosed(t *testing.T, open Opener) driver.Driver {
	t.Helper()
	d := open(t)
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return d
}

func write(t *testing.T, d driver.Driver, k driver.CounterKey, id string, state []byte, expires, ts int64) {
	t.Helper()
	err := d.WriteShard(ctx(t), &driver.WriteShardParams{
		Namespace: k.Namespace, Counter: k.Counter, Timestamp: ts,
		Shard: driver.Shard{ID: id, State: state, ExpiresAt: expires},
	})
	if err != nil {
		t.Fatalf("WriteShard(%s, ts %d): %v", id, ts, err)
	}
}

func read(t *testing.T, d driver.Driver, k driver.CounterKey) *driver.ShardSet {
	t.Helper()
	set, err := d.ReadShards(ctx(t), &driver.ReadShardsParams{Namespace: k.Namespace, Counter: k.Counter})
	if err != nil {
		t.Fatalf("ReadShards: %v", err)
	}
	if set == nil {
		t.Fatal("ReadShards returned a nil set")
	}
	return set
}

func fold(t *testing.T, d driver.Driver, k driver.CounterKey, del []string, tally []byte, ts int64) {
	t.Helper()
	err := d.Fold(ctx(t), &driver.FoldParams{
		Namespace: k.Namespace, Counter: k.Counter, Delete: del,
		Tally: driver.Tally{State: tally, Timestamp: ts},
	})
	if err != nil {
		t.Fatalf("Fold(%v, ts %d): %v", del, ts, err)
	}
}

// shardsOf renders the live shards as id=state@expires for readable diffs.
func shardsOf(set *driver.ShardSet) []string {
	out := []string{}
	for _, s := range set.Shards {
		out = append(out, fmt.Sprintf("%s=%x@%d", s.ID, s.State, s.ExpiresAt))
	}
	return out
}

func wantShards(t *testing.T, set *driver.ShardSet, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if got := shardsOf(set); !reflect.DeepEqual(got, want) {
		t.Errorf("shards = %v, want %v", got, want)
	}
}

// wantState reads k and checks its live shards (as wantShards) and its tally
// (state@ts, or none if state is nil).
func wantState(t *testing.T, d driver.Driver, k driver.CounterKey, state []byte, ts int64, shards ...string) {
	t.Helper()
	set := read(t, d, k)
	wantShards(t, set, shards...)
	switch {
	case state == nil && set.Tally != nil:
		t.Errorf("tally = %x@%d, want none", set.Tally.State, set.Tally.Timestamp)
	case state != nil && set.Tally == nil:
		t.Errorf("no tally, want %x@%d", state, ts)
	case state != nil && (!bytes.Equal(set.Tally.State, state) || set.Tally.Timestamp != ts):
		t.Errorf("tally = %x@%d, want %x@%d", set.Tally.State, set.Tally.Timestamp, state, ts)
	}
}

func exerciseShards(t *testing.T, d driver.Driver) {
	t.Run("NeverWrittenIsEmpty", func(t *testing.T) {
		t.Parallel()
		wantState(t, d, counter("empty"), nil, 0)
	})

	t.Run("WriteRead", func(t *testing.T) {
		t.Parallel()
		k := counter("wr")
		write(t, d, k, "m2", []byte{2, 2}, 900, 100)
		write(t, d, k, "m1", []byte{1}, 800, 100)
		write(t, d, k, "m3", []byte{}, 700, 100)
		wantShards(t, read(t, d, k), "m1=01@800", "m2=0202@900", "m3=@700")
	})

	t.Run("NewerWriteReplaces", func(t *testing.T) {
		t.Parallel()
		k := counter("newer")
		write(t, d, k, "m", []byte("v1"), 1000, 10)
		write(t, d, k, "m", []byte("v2"), 1000, 11)
		wantShards(t, read(t, d, k), "m=7632@1000")
	})

	t.Run("OlderWriteNeverOverwrites", func(t *testing.T) {
		t.Parallel()
		k := counter("older")
		write(t, d, k, "m", []byte("new"), 1000, 50)
		write(t, d, k, "m", []byte("old"), 1000, 49)
		write(t, d, k, "m", []byte("older"), 1000, 1)
		wantShards(t, read(t, d, k), "m=6e6577@1000")
	})

	t.Run("ReplayedWriteIsHarmless", func(t *testing.T) {
		t.Parallel()
		k := counter("replay")
		for range 5 {
			write(t, d, k, "m", []byte("same"), 1000, 77)
		}
		wantShards(t, read(t, d, k), "m=73616d65@1000")
	})

	t.Run("CountersAreIsolated", func(t *testing.T) {
		t.Parallel()
		// Names chosen so that a key layout that merely concatenates
		// components would mix them up.
		ns := unique("ns-iso")
		a := driver.CounterKey{Namespace: ns + "a", Counter: "bc"}
		b := driver.CounterKey{Namespace: ns + "ab", Counter: "c"}
		c := driver.CounterKey{Namespace: ns + "a", Counter: "b"}
		write(t, d, a, "m", []byte{0xa}, 100, 1)
		write(t, d, b, "m", []byte{0xb}, 100, 1)
		write(t, d, c, "m", []byte{0xc}, 100, 1)
		wantShards(t, read(t, d, a), "m=0a@100")
		wantShards(t, read(t, d, b), "m=0b@100")
		wantShards(t, read(t, d, c), "m=0c@100")
	})

	t.Run("UnusualNames", func(t *testing.T) {
		t.Parallel()
		k := driver.CounterKey{Namespace: unique("ns-ünïcödé/🙂"), Counter: strings.Repeat("x", 256)}
		write(t, d, k, "m/with:odd chars", []byte{9}, 100, 1)
		wantShards(t, read(t, d, k), "m/with:odd chars=09@100")
	})

	t.Run("ConcurrentWritersAllVisible", func(t *testing.T) {
		t.Parallel()
		k := counter("conc")
		const writers = 16
		errs := race(writers, func(i int) error {
			return d.WriteShard(ctx(t), &driver.WriteShardParams{
				Namespace: k.Namespace, Counter: k.Counter, Timestamp: int64(10 + i),
				Shard: driver.Shard{ID: fmt.Sprintf("m%02d", i), State: []byte{byte(i)}, ExpiresAt: 1000},
			})
		})
		for _, err := range errs {
			if err != nil {
				t.Fatalf("WriteShard: %v", err)
			}
		}
		if got := len(read(t, d, k).Shards); got != writers {
			t.Fatalf("read %d shards, want %d", got, writers)
		}
	})
}

// exerciseShardBatches checks WriteShards: each write of a batch is the
// WriteShard it stands for, whatever else the batch holds.
func exerciseShardBatches(t *testing.T, d driver.Driver) {
	w := func(k driver.CounterKey, id string, state []byte, expires, ts int64) driver.WriteShardParams {
		return driver.WriteShardParams{Namespace: k.Namespace, Counter: k.Counter, Timestamp: ts,
			Shard: driver.Shard{ID: id, State: state, ExpiresAt: expires}}
	}
	t.Run("EachWriteAsWriteShard", func(t *testing.T) {
		t.Parallel()
		// Names a key layout that concatenates would mix up; a shard
		// written twice in one batch (the higher timestamp wins, whatever
		// the order); a write older than the stored row; a write of a
		// shard a fold deleted at a higher timestamp.
		ns := unique("ns-batch")
		a := driver.CounterKey{Namespace: ns + "a", Counter: "bc"}
		b := driver.CounterKey{Namespace: ns + "ab", Counter: "c"}
		old := counterWithShards(t, d, "batchold", 2)
		fold(t, d, old, []string{"a"}, []byte("T"), 150)
		err := d.WriteShards(ctx(t), []driver.WriteShardParams{
			w(a, "m2", []byte{2}, 900, 12),
			w(a, "m1", []byte{1}, 800, 10),
			w(b, "m", []byte{0xb}, 100, 1),
			w(a, "m2", []byte{3}, 900, 11),
			w(old, "b", []byte{9}, 200, 5),
			w(old, "a", []byte{8}, 100, 120),
		})
		if err != nil {
			t.Fatalf("WriteShards: %v", err)
		}
		wantShards(t, read(t, d, a), "m1=01@800", "m2=02@900")
		wantShards(t, read(t, d, b), "m=0b@100")
		wantState(t, d, old, []byte("T"), 150, "b=02@200")
	})

	t.Run("EmptyBatch", func(t *testing.T) {
		t.Parallel()
		if err := d.WriteShards(ctx(t), nil); err != nil {
			t.Fatalf("WriteShards of nothing: %v", err)
		}
	})

	t.Run("OneLevelPerBatch", func(t *testing.T) {
		t.Parallel()
		k := counter("batchlevels")
		one, quorum := w(k, "m1", []byte{1}, 100, 1), w(k, "m2", []byte{2}, 100, 1)
		one.Consistency, quorum.Consistency = driver.One, driver.Quorum
		if err := d.WriteShards(ctx(t), []driver.WriteShardParams{one, quorum}); err == nil {
			t.Fatal("WriteShards at two levels: no error")
		}
		wantState(t, d, k, nil, 0)
	})

	t.Run("ConcurrentBatchesAllVisible", func(t *testing.T) {
		t.Parallel()
		keys := []driver.CounterKey{counter("batchconc"), counter("batchconc")}
		const batches = 8
		errs := race(batches, func(i int) error {
			return d.WriteShards(ctx(t), []driver.WriteShardParams{
				w(keys[0], fmt.Sprintf("m%02d", i), []byte{byte(i)}, 1000, int64(10+i)),
				w(keys[1], fmt.Sprintf("m%02d", i), []byte{byte(i)}, 1000, int64(10+i)),
			})
		})
		for _, err := range errs {
			if err != nil {
				t.Fatalf("WriteShards: %v", err)
			}
		}
		for _, k := range keys {
			if got := len(read(t, d, k).Shards); got != batches {
				t.Fatalf("read %d shards of %s, want %d", got, k.Counter, batches)
			}
		}
	})
}

// counterWithShards returns a fresh counter holding the first n of the
// shards a=01@100, b=02@200 and c=03@300, written at timestamps 10, 20 and
// 30: what most fold tests start from.
func counterWithShards(t *testing.T, d driver.Driver, prefix string, n int) driver.CounterKey {
	t.Helper()
	k := counter(prefix)
	for i, id := range []string{"a", "b", "c"}[:n] {
		write(t, d, k, id, []byte{byte(i + 1)}, int64(100*(i+1)), int64(10*(i+1)))
	}
	return k
}

func exerciseFold(t *testing.T, d driver.Driver) {
	t.Run("DeletesListedAndWritesTally", func(t *testing.T) {
		t.Parallel()
		k := counterWithShards(t, d, "fold", 3)
		fold(t, d, k, []string{"a", "b"}, []byte("T1"), 201)
		wantState(t, d, k, []byte("T1"), 201, "c=03@300")
	})

	t.Run("ReplayedManyTimes", func(t *testing.T) {
		t.Parallel()
		k := counterWithShards(t, d, "foldreplay", 3)
		for range 10 {
			fold(t, d, k, []string{"a", "b"}, []byte("T1"), 201)
		}
		wantState(t, d, k, []byte("T1"), 201, "c=03@300")
	})

	t.Run("LowerTimestampNeverOverwritesTally", func(t *testing.T) {
		t.Parallel()
		k := counterWithShards(t, d, "foldorder", 2)
		// The later GC folded a and b; the earlier GC (a only) arrives late.
		fold(t, d, k, []string{"a", "b"}, []byte("AB"), 201)
		fold(t, d, k, []string{"a"}, []byte("A"), 101)
		wantState(t, d, k, []byte("AB"), 201)
	})

	t.Run("RacingFoldsEitherOrder", func(t *testing.T) {
		t.Parallel()
		for _, order := range []string{"small-first", "big-first"} {
			k := counterWithShards(t, d, "foldrace-"+order, 2)
			small := func() { fold(t, d, k, []string{"a"}, []byte("A"), 101) }
			big := func() { fold(t, d, k, []string{"a", "b"}, []byte("AB"), 201) }
			if order == "small-first" {
				small()
				big()
			} else {
				big()
				small()
			}
			wantState(t, d, k, []byte("AB"), 201)
		}
	})

	t.Run("LateOlderWriteStaysDeleted", func(t *testing.T) {
		t.Parallel()
		k := counterWithShards(t, d, "foldlate", 1)
		fold(t, d, k, []string{"a"}, []byte("A"), 101)
		// A dead mutator's delayed write: any timestamp below its expiry,
		// hence below the fold's.
		write(t, d, k, "a", []byte{7}, 100, 99)
		write(t, d, k, "a", []byte{8}, 100, 11)
		wantState(t, d, k, []byte("A"), 101)
	})

	t.Run("DeleteWinsTimestampTie", func(t *testing.T) {
		t.Parallel()
		k := counterWithShards(t, d, "foldtie", 1)
		fold(t, d, k, []string{"a"}, []byte("A"), 101)
		// A write at exactly the fold's timestamp (expires_at kept above it,
		// as the seam requires) loses to the delete.
		write(t, d, k, "a", []byte{2}, 500, 101)
		wantShards(t, read(t, d, k))
	})

	t.Run("NewerWriteAfterDeleteVisible", func(t *testing.T) {
		t.Parallel()
		k := counterWithShards(t, d, "foldnewer", 1)
		fold(t, d, k, []string{"a"}, []byte("A"), 101)
		write(t, d, k, "a", []byte{2}, 500, 102)
		wantState(t, d, k, []byte("A"), 101, "a=02@500")
	})

	t.Run("TallyOnly", func(t *testing.T) {
		t.Parallel()
		k := counter("tallyonly")
		fold(t, d, k, nil, []byte("T"), 5)
		wantState(t, d, k, []byte("T"), 5)
	})

	t.Run("SuccessiveFoldsAdvanceTally", func(t *testing.T) {
		t.Parallel()
		k := counterWithShards(t, d, "foldchain", 1)
		fold(t, d, k, []string{"a"}, []byte("A"), 101)
		write(t, d, k, "b", []byte{2}, 200, 150)
		fold(t, d, k, []string{"b"}, []byte("AB"), 201)
		// Replaying the first fold later changes nothing.
		fold(t, d, k, []string{"a"}, []byte("A"), 101)
		wantState(t, d, k, []byte("AB"), 201)
	})
}

// readFrom reads k's shards from id from on. A driver may return live
// shards below from too; callers look only at the ones at or above it.
func readFrom(t *testing.T, d driver.Driver, k driver.CounterKey, from string) *driver.ShardSet {
	t.Helper()
	set, err := d.ReadShards(ctx(t), &driver.ReadShardsParams{Namespace: k.Namespace, Counter: k.Counter, From: from})
	if err != nil {
		t.Fatalf("ReadShards(From %q): %v", from, err)
	}
	if set == nil {
		t.Fatal("ReadShards returned a nil set")
	}
	return set
}

// exerciseBoundedReads checks ReadShardsParams.From and FoldParams.Write,
// which let the sharded engine read past folded shards.
func exerciseBoundedReads(t *testing.T, d driver.Driver) {
	t.Run("FromReturnsEveryShardAtOrAbove", func(t *testing.T) {
		t.Parallel()
		k := counter("from")
		// IDs of several lengths: the embedded store orders keys by length
		// first, so a bound must not lose a shorter or longer ID above it.
		ids := []string{"-0001-x", "-0002-x", "-0003-x", "-0002", "-0003-xyz", "0", "9abc", "~anchor", "-"}
		for i, id := range ids {
			write(t, d, k, id, []byte{byte(i + 1)}, int64(1000+i), int64(10+i))
		}
		fold(t, d, k, []string{"-0001-x"}, []byte("T"), 2000)
		for _, from := range []string{"", "-", "-0002-x", "-0003", "-0003-y", "0", "~", "~anchor", "~~"} {
			set := readFrom(t, d, k, from)
			var got, want []string
			for _, s := range set.Shards {
				if s.ID >= from {
					got = append(got, s.ID)
				}
			}
			for _, id := range ids {
				if id >= from && id != "-0001-x" {
					want = append(want, id)
				}
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("From %q: shards at or above = %v, want %v", from, got, want)
			}
			for _, s := range set.Shards {
				if s.ID == "-0001-x" {
					t.Errorf("From %q: the folded shard came back", from)
				}
			}
			// Cassandra carries the tally only alongside a row; "~~" is
			// above every row, where the contract allows an empty set.
			if from != "~~" && (set.Tally == nil || string(set.Tally.State) != "T") {
				t.Errorf("From %q: tally = %+v, want T@2000", from, set.Tally)
			}
		}
	})

	t.Run("FoldWritesShardsAtItsTimestamp", func(t *testing.T) {
		t.Parallel()
		k := counterWithShards(t, d, "foldwrite", 2)
		anchor := driver.Shard{ID: "~anchor", State: []byte{0}, ExpiresAt: math.MaxInt64}
		err := d.Fold(ctx(t), &driver.FoldParams{
			Namespace: k.Namespace, Counter: k.Counter, Delete: []string{"a"},
			Tally: driver.Tally{State: []byte("A"), Timestamp: 101}, Write: []driver.Shard{anchor},
		})
		if err != nil {
			t.Fatalf("Fold: %v", err)
		}
		wantState(t, d, k, []byte("A"), 101, "b=02@200", fmt.Sprintf("~anchor=00@%d", int64(math.MaxInt64)))
		// The written shard carries the fold's timestamp: an older write
		// leaves it, a newer one replaces it.
		write(t, d, k, "~anchor", []byte{9}, math.MaxInt64, 100)
		wantShards(t, readFrom(t, d, k, "~"), fmt.Sprintf("~anchor=00@%d", int64(math.MaxInt64)))
		write(t, d, k, "~anchor", []byte{9}, math.MaxInt64, 102)
		wantShards(t, readFrom(t, d, k, "~"), fmt.Sprintf("~anchor=09@%d", int64(math.MaxInt64)))
	})

	t.Run("FoldThatDeletesAndWritesOneShardIsRefused", func(t *testing.T) {
		t.Parallel()
		k := counterWithShards(t, d, "foldboth", 1)
		err := d.Fold(ctx(t), &driver.FoldParams{
			Namespace: k.Namespace, Counter: k.Counter, Delete: []string{"a"},
			Tally: driver.Tally{State: []byte("A"), Timestamp: 101}, Write: []driver.Shard{{ID: "a", State: []byte{1}, ExpiresAt: 500}},
		})
		if err == nil {
			t.Fatal("Fold deleting and writing shard a: no error")
		}
		wantState(t, d, k, nil, 0, "a=01@100")
	})
}

func exerciseListCounters(t *testing.T, d driver.Driver) {
	t.Parallel()
	c := ctx(t)
	ns := unique("ns-listc")
	other := unique("ns-listc-other")
	keys := []driver.CounterKey{{Namespace: ns, Counter: "x"}, {Namespace: ns, Counter: "y"}, {Namespace: other, Counter: "x"}}
	for _, k := range keys {
		write(t, d, k, "m", []byte{1}, 100, 1)
	}
	// A counter whose shards were all folded is still listed: it has a tally.
	folded := driver.CounterKey{Namespace: ns, Counter: "z"}
	write(t, d, folded, "m", []byte{1}, 100, 1)
	fold(t, d, folded, []string{"m"}, []byte("T"), 101)

	got, err := d.ListCounters(c, &driver.ListCountersParams{Namespace: ns})
	if err != nil {
		t.Fatalf("ListCounters: %v", err)
	}
	names := map[string]bool{}
	for _, k := range got {
		if k.Namespace != ns {
			t.Errorf("ListCounters(%q) returned %v from another namespace", ns, k)
		}
		names[k.Counter] = true
	}
	if len(got) != 3 || !names["x"] || !names["y"] || !names["z"] {
		t.Errorf("ListCounters(%q) = %v, want x, y and z once each", ns, got)
	}

	all, err := d.ListCounters(c, &driver.ListCountersParams{})
	if err != nil {
		t.Fatalf("ListCounters(all): %v", err)
	}
	found := 0
	for _, k := range all {
		if k.Namespace == ns || k.Namespace == other {
			found++
		}
	}
	if found != 4 {
		t.Errorf("ListCounters(all) has %d of this test's 4 counters", found)
	}
}
