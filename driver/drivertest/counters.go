package drivertest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/abacusdb/abacus/driver"
)

// The counter models' capabilities (driver.Actors, driver.NativeCounters,
// driver.CASCounters) are not part of driver.Driver yet, so the suite
// asserts them here: a driver that is exercised must have them.

// capability returns d as the capability C, failing the test if d does
// not implement it.
func capability[C any](t *testing.T, d driver.Driver) C {
	t.Helper()
	c, ok := d.(C)
	if !ok {
		t.Fatalf("%s driver does not implement %v", d.Name(), reflect.TypeFor[C]())
	}
	return c
}

// ---- actors ------------------------------------------------------------------

// exerciseActors checks driver.Actors: each actor's value follows
// last-write-wins on its version whatever the arrival order, ties settle
// the way Cassandra settles them, replays change nothing, counters are
// isolated and values come back sorted by actor.
func exerciseActors(t *testing.T, d driver.Driver, open Opener) {
	a := capability[driver.Actors](t, d)

	t.Run("NeverSetIsEmpty", func(t *testing.T) {
		t.Parallel()
		vals, err := a.ReadActorValues(ctx(t), &driver.ReadActorValuesParams{Namespace: unique("ns-actor"), Counter: "never"})
		if err != nil {
			t.Fatalf("ReadActorValues: %v", err)
		}
		if len(vals) != 0 {
			t.Fatalf("ReadActorValues of a counter never set = %+v, want none", vals)
		}
	})

	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		k := counter("actor-rt")
		setActor(t, a, k, "zero", 0, 1)
		setActor(t, a, k, "neg", -42, 7)
		setActor(t, a, k, "max", math.MaxInt64, 1<<52)
		setActor(t, a, k, "min", math.MinInt64, 3)
		wantActors(t, a, k,
			driver.ActorValue{Actor: "max", Value: math.MaxInt64, Version: 1 << 52},
			driver.ActorValue{Actor: "min", Value: math.MinInt64, Version: 3},
			driver.ActorValue{Actor: "neg", Value: -42, Version: 7},
			driver.ActorValue{Actor: "zero", Value: 0, Version: 1},
		)
	})

	// The example of “Highly Available Counters Using Cassandra”: P1 v1 1000, P2 v1 500, P1 v2 1500, arriving in
	// every possible order, always ends at P1 1500 and P2 500 (sum 2000).
	t.Run("HigherVersionWinsInEveryOrder", func(t *testing.T) {
		t.Parallel()
		type set struct {
			actor          string
			value, version int64
		}
		writes := []set{{"P1", 1000, 1}, {"P2", 500, 1}, {"P1", 1500, 2}}
		ns := unique("ns-actor-order")
		for i, order := range permutations(len(writes)) {
			k := driver.CounterKey{Namespace: ns, Counter: fmt.Sprint("IBM-", i)}
			for _, w := range order {
				setActor(t, a, k, writes[w].actor, writes[w].value, writes[w].version)
			}
			vals := wantActors(t, a, k,
				driver.ActorValue{Actor: "P1", Value: 1500, Version: 2},
				driver.ActorValue{Actor: "P2", Value: 500, Version: 1},
			)
			if sum := vals[0].Value + vals[1].Value; sum != 2000 {
				t.Errorf("order %v: sum %d, want 2000", order, sum)
			}
		}
	})

	t.Run("ReplayIsHarmless", func(t *testing.T) {
		t.Parallel()
		k := counter("actor-replay")
		for range 4 {
			setActor(t, a, k, "p", 10, 5)
		}
		setActor(t, a, k, "p", 20, 6)
		// Replays of the older write arriving after the newer one.
		for range 4 {
			setActor(t, a, k, "p", 10, 5)
		}
		wantActors(t, a, k, driver.ActorValue{Actor: "p", Value: 20, Version: 6})
	})

	// Cassandra breaks a tie by comparing the encoded bigints as signed
	// bytes (driver.Actors), so the winner is the numerically greater value
	// only for some pairs. Each pair is written in both orders.
	// Two values at one version are a caller's mistake, but replicas must
	// still agree on one of them, whatever order the writes arrive in.
	// Which one is the store's rule: Cassandra 2.x keeps the larger value as
	// signed bytes, 3.0 and later as unsigned bytes (the embedded store
	// follows 2.x; see its own test), so the contract is only that the
	// winner is one of the two and does not depend on the order.
	t.Run("EqualVersionsSettleOrderFree", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-actor-tie")
		for i, tc := range [][2]int64{
			{1000, 1500}, {-5, -3}, {127, 128}, {100, 200}, {-1, 1}, {math.MinInt64, 0},
		} {
			var winners [2]int64
			for j, pair := range [][2]int64{{tc[0], tc[1]}, {tc[1], tc[0]}} {
				k := driver.CounterKey{Namespace: ns, Counter: fmt.Sprint("c", i, "-", j)}
				setActor(t, a, k, "p", pair[0], 9)
				setActor(t, a, k, "p", pair[1], 9)
				got, err := a.ReadActorValues(ctx(t), &driver.ReadActorValuesParams{Namespace: k.Namespace, Counter: k.Counter})
				if err != nil || len(got) != 1 || got[0].Actor != "p" || got[0].Version != 9 {
					t.Fatalf("ReadActorValues(%v) = %+v, %v; want one value of p at version 9", k, got, err)
				}
				winners[j] = got[0].Value
			}
			if winners[0] != winners[1] || (winners[0] != tc[0] && winners[0] != tc[1]) {
				t.Errorf("a tie of %d and %d settled on %d in one order and %d in the other; want the same one of the two", tc[0], tc[1], winners[0], winners[1])
			}
		}
	})

	t.Run("LookAlikeNamesAreIsolated", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-actor-iso")
		// Keys that merely concatenated components would mix up.
		setActor(t, a, driver.CounterKey{Namespace: ns + "a", Counter: "bc"}, "d", 1, 1)
		setActor(t, a, driver.CounterKey{Namespace: ns + "ab", Counter: "c"}, "d", 2, 1)
		setActor(t, a, driver.CounterKey{Namespace: ns + "a", Counter: "b"}, "cd", 3, 1)
		wantActors(t, a, driver.CounterKey{Namespace: ns + "a", Counter: "bc"}, driver.ActorValue{Actor: "d", Value: 1, Version: 1})
		wantActors(t, a, driver.CounterKey{Namespace: ns + "ab", Counter: "c"}, driver.ActorValue{Actor: "d", Value: 2, Version: 1})
		wantActors(t, a, driver.CounterKey{Namespace: ns + "a", Counter: "b"}, driver.ActorValue{Actor: "cd", Value: 3, Version: 1})
	})

	t.Run("SortedByActor", func(t *testing.T) {
		t.Parallel()
		k := counter("actor-sort")
		// Written out of order, with lengths that disagree with the
		// names' order, and a non-ASCII name.
		names := []string{"b", "aa", "ä", "a", "ab", "B", "a/b:c"}
		for i, n := range names {
			setActor(t, a, k, n, int64(i), int64(i+1))
		}
		var want []driver.ActorValue
		for i, n := range names {
			want = append(want, driver.ActorValue{Actor: n, Value: int64(i), Version: int64(i + 1)})
		}
		slices.SortFunc(want, func(x, y driver.ActorValue) int {
			switch {
			case x.Actor < y.Actor:
				return -1
			case x.Actor > y.Actor:
				return 1
			}
			return 0
		})
		wantActors(t, a, k, want...)
	})

	t.Run("VersionMustBePositive", func(t *testing.T) {
		t.Parallel()
		k := counter("actor-version")
		for _, v := range []int64{0, -1, math.MinInt64} {
			err := a.SetActorValue(ctx(t), &driver.SetActorValueParams{Namespace: k.Namespace, Counter: k.Counter, Actor: "p", Value: 1, Version: v})
			if err == nil {
				t.Errorf("SetActorValue at version %d succeeded, want an error", v)
			}
		}
		wantActors(t, a, k)
	})

	t.Run("ConcurrentActorsAllVisible", func(t *testing.T) {
		t.Parallel()
		k := counter("actor-conc")
		const actors = 8
		errs := race(actors, func(i int) error {
			for v := int64(1); v <= 5; v++ {
				if err := a.SetActorValue(ctx(t), &driver.SetActorValueParams{
					Namespace: k.Namespace, Counter: k.Counter, Actor: fmt.Sprint("p", i), Value: int64(i) * v, Version: v,
				}); err != nil {
					return err
				}
			}
			return nil
		})
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("SetActorValue: %v", err)
		}
		var want []driver.ActorValue
		for i := range actors {
			want = append(want, driver.ActorValue{Actor: fmt.Sprint("p", i), Value: int64(i) * 5, Version: 5})
		}
		wantActors(t, a, k, want...)
	})

	t.Run("ActorsClosed", func(t *testing.T) {
		a2 := capability[driver.Actors](t, openClosed(t, open))
		c := context.Background()
		err := a2.SetActorValue(c, &driver.SetActorValueParams{Namespace: "x", Counter: "y", Actor: "a", Value: 1, Version: 1})
		if !errors.Is(err, driver.ErrClosed) {
			t.Errorf("SetActorValue after Close: got %v, want ErrClosed", err)
		}
		if _, err := a2.ReadActorValues(c, &driver.ReadActorValuesParams{Namespace: "x", Counter: "y"}); !errors.Is(err, driver.ErrClosed) {
			t.Errorf("ReadActorValues after Close: got %v, want ErrClosed", err)
		}
	})
}

func setActor(t *testing.T, a driver.Actors, k driver.CounterKey, actor string, value, version int64) {
	t.Helper()
	err := a.SetActorValue(ctx(t), &driver.SetActorValueParams{
		Namespace: k.Namespace, Counter: k.Counter, Actor: actor, Value: value, Version: version,
	})
	if err != nil {
		t.Fatalf("SetActorValue(%s/%s/%s = %d @%d): %v", k.Namespace, k.Counter, actor, value, version, err)
	}
}

// wantActors fails unless the counter's values are exactly want (in
// order), and returns them.
func wantActors(t *testing.T, a driver.Actors, k driver.CounterKey, want ...driver.ActorValue) []driver.ActorValue {
	t.Helper()
	got, err := a.ReadActorValues(ctx(t), &driver.ReadActorValuesParams{Namespace: k.Namespace, Counter: k.Counter})
	if err != nil {
		t.Fatalf("ReadActorValues(%s/%s): %v", k.Namespace, k.Counter, err)
	}
	if want == nil {
		want = []driver.ActorValue{}
	}
	if got == nil {
		got = []driver.ActorValue{}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadActorValues(%s/%s) = %+v, want %+v", k.Namespace, k.Counter, got, want)
	}
	return got
}

// permutations returns every order of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := slices.Insert(slices.Clone(p), i, n-1)
			out = append(out, q)
		}
	}
	return out
}

// ---- native counters -----------------------------------------------------------

// exerciseNative checks driver.NativeCounters on a healthy store: adds of
// either sign sum up exactly, also from concurrent callers, and a counter
// never added to reads 0. Overflow behaviour differs between the drivers
// (Cassandra wraps) and is tested in each driver's package.
func exerciseNative(t *testing.T, d driver.Driver, open Opener) {
	n := capability[driver.NativeCounters](t, d)

	t.Run("NeverAddedReadsZero", func(t *testing.T) {
		t.Parallel()
		wantNative(t, n, counter("native-never"), 0)
	})

	t.Run("AddAndRead", func(t *testing.T) {
		t.Parallel()
		k := counter("native-add")
		addNative(t, n, k, 5)
		wantNative(t, n, k, 5)
		addNative(t, n, k, 37)
		addNative(t, n, k, 0)
		wantNative(t, n, k, 42)
	})

	t.Run("NegativeDeltas", func(t *testing.T) {
		t.Parallel()
		k := counter("native-neg")
		addNative(t, n, k, -3)
		wantNative(t, n, k, -3)
		addNative(t, n, k, 10)
		addNative(t, n, k, -20)
		wantNative(t, n, k, -13)
	})

	t.Run("LookAlikeNamesAreIsolated", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-native-iso")
		addNative(t, n, driver.CounterKey{Namespace: ns + "a", Counter: "bc"}, 1)
		addNative(t, n, driver.CounterKey{Namespace: ns + "ab", Counter: "c"}, 2)
		wantNative(t, n, driver.CounterKey{Namespace: ns + "a", Counter: "bc"}, 1)
		wantNative(t, n, driver.CounterKey{Namespace: ns + "ab", Counter: "c"}, 2)
		wantNative(t, n, driver.CounterKey{Namespace: ns + "a", Counter: "b"}, 0)
	})

	// An add that is not atomic loses updates here. Every add must
	// succeed: on a healthy store an unknown outcome would make the sum
	// unverifiable, so it fails the test rather than being guessed at.
	t.Run("ConcurrentAddsSumExactly", func(t *testing.T) {
		t.Parallel()
		k := counter("native-conc")
		const adders, adds = 8, 25
		var want int64
		for i := range adders {
			for j := range adds {
				want += nativeDelta(i, j)
			}
		}
		errs := race(adders, func(i int) error {
			for j := range adds {
				if err := n.AddNative(ctx(t), &driver.AddNativeParams{Namespace: k.Namespace, Counter: k.Counter, Delta: nativeDelta(i, j)}); err != nil {
					return fmt.Errorf("adder %d, add %d: %w", i, j, err)
				}
			}
			return nil
		})
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		wantNative(t, n, k, want)
	})

	t.Run("NativeClosed", func(t *testing.T) {
		n2 := capability[driver.NativeCounters](t, openClosed(t, open))
		c := context.Background()
		if err := n2.AddNative(c, &driver.AddNativeParams{Namespace: "x", Counter: "y", Delta: 1}); !errors.Is(err, driver.ErrClosed) {
			t.Errorf("AddNative after Close: got %v, want ErrClosed", err)
		}
		if _, err := n2.ReadNative(c, &driver.ReadNativeParams{Namespace: "x", Counter: "y"}); !errors.Is(err, driver.ErrClosed) {
			t.Errorf("ReadNative after Close: got %v, want ErrClosed", err)
		}
	})
}

// nativeDelta is adder i's j-th delta: mixed signs and sizes.
func nativeDelta(i, j int) int64 {
	v := int64(i*1000 + j + 1)
	if (i+j)%3 == 0 {
		return -v
	}
	return v
}

func addNative(t *testing.T, n driver.NativeCounters, k driver.CounterKey, delta int64) {
	t.Helper()
	if err := n.AddNative(ctx(t), &driver.AddNativeParams{Namespace: k.Namespace, Counter: k.Counter, Delta: delta}); err != nil {
		t.Fatalf("AddNative(%s/%s, %d): %v", k.Namespace, k.Counter, delta, err)
	}
}

func wantNative(t *testing.T, n driver.NativeCounters, k driver.CounterKey, want int64) {
	t.Helper()
	got, err := n.ReadNative(ctx(t), &driver.ReadNativeParams{Namespace: k.Namespace, Counter: k.Counter})
	if err != nil {
		t.Fatalf("ReadNative(%s/%s): %v", k.Namespace, k.Counter, err)
	}
	if got != want {
		t.Fatalf("ReadNative(%s/%s) = %d, want %d", k.Namespace, k.Counter, got, want)
	}
}

// ---- cas counters ------------------------------------------------------------------

// exerciseCAS checks driver.CASCounters: a set applies only when the
// expectation holds, reports the current value when it does not, and is
// atomic with its check, so racing inserts have one winner and racing
// increment loops lose no increment.
func exerciseCAS(t *testing.T, d driver.Driver, open Opener) {
	c := capability[driver.CASCounters](t, d)

	t.Run("NeverWrittenDoesNotExist", func(t *testing.T) {
		t.Parallel()
		for _, serial := range []bool{false, true} {
			for _, cl := range []driver.Consistency{driver.Default, driver.Quorum, driver.LocalQuorum, driver.One} {
				got, err := c.ReadCAS(ctx(t), &driver.ReadCASParams{Namespace: unique("ns-cas"), Counter: "never", Consistency: cl, Serial: serial})
				if err != nil || got != (driver.CASValue{}) {
					t.Errorf("ReadCAS at %v (serial %v) of a counter never written = %+v, %v; want Exists false", cl, serial, got, err)
				}
			}
		}
	})

	t.Run("InsertIfAbsentThenUpdate", func(t *testing.T) {
		t.Parallel()
		k := counter("cas-rt")
		absent := driver.CASValue{}
		if r := cas(t, c, k, absent, 10); !r.Applied || r.Current != (driver.CASValue{Exists: true, Value: 10}) {
			t.Fatalf("insert of an absent counter = %+v, want applied with current 10", r)
		}
		wantCAS(t, c, k, driver.CASValue{Exists: true, Value: 10})
		if r := cas(t, c, k, driver.CASValue{Exists: true, Value: 10}, -4); !r.Applied || r.Current.Value != -4 {
			t.Fatalf("update expecting the stored 10 = %+v, want applied", r)
		}
		// Zero is a value like any other, distinct from "absent".
		if r := cas(t, c, k, driver.CASValue{Exists: true, Value: -4}, 0); !r.Applied {
			t.Fatalf("update to 0 = %+v, want applied", r)
		}
		for _, serial := range []bool{false, true} {
			for _, cl := range []driver.Consistency{driver.Default, driver.Quorum, driver.All, driver.LocalQuorum, driver.LocalOne, driver.One} {
				got, err := c.ReadCAS(ctx(t), &driver.ReadCASParams{Namespace: k.Namespace, Counter: k.Counter, Consistency: cl, Serial: serial})
				if err != nil || got != (driver.CASValue{Exists: true, Value: 0}) {
					t.Errorf("ReadCAS at %v (serial %v) = %+v, %v; want Exists with 0", cl, serial, got, err)
				}
			}
		}
	})

	t.Run("WrongExpectationNotApplied", func(t *testing.T) {
		t.Parallel()
		k := counter("cas-wrong")
		cur := driver.CASValue{Exists: true, Value: 7}
		cas(t, c, k, driver.CASValue{}, 7)
		for _, expect := range []driver.CASValue{
			{}, // insert-if-absent of an existing counter
			{Exists: true, Value: 8},
			{Exists: true, Value: 0},
			{Exists: true, Value: -7},
		} {
			if r := cas(t, c, k, expect, 99); r.Applied || r.Current != cur {
				t.Errorf("set expecting %+v = %+v, want not applied, current %+v", expect, r, cur)
			}
		}
		wantCAS(t, c, k, cur)
	})

	t.Run("UpdateOfAbsentNotApplied", func(t *testing.T) {
		t.Parallel()
		k := counter("cas-absent")
		for _, v := range []int64{0, 5} {
			if r := cas(t, c, k, driver.CASValue{Exists: true, Value: v}, 1); r.Applied || r.Current != (driver.CASValue{}) {
				t.Errorf("update expecting %d of an absent counter = %+v, want not applied, current absent", v, r)
			}
		}
		wantCAS(t, c, k, driver.CASValue{})
	})

	t.Run("LookAlikeNamesAreIsolated", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-cas-iso")
		cas(t, c, driver.CounterKey{Namespace: ns + "a", Counter: "bc"}, driver.CASValue{}, 1)
		cas(t, c, driver.CounterKey{Namespace: ns + "ab", Counter: "c"}, driver.CASValue{}, 2)
		wantCAS(t, c, driver.CounterKey{Namespace: ns + "a", Counter: "bc"}, driver.CASValue{Exists: true, Value: 1})
		wantCAS(t, c, driver.CounterKey{Namespace: ns + "ab", Counter: "c"}, driver.CASValue{Exists: true, Value: 2})
		wantCAS(t, c, driver.CounterKey{Namespace: ns + "a", Counter: "b"}, driver.CASValue{})
	})

	// Eight racers insert their own value into one absent counter. Racing
	// Paxos rounds may time out with an unknown outcome; the racer then
	// tries again, and finding its own value stored means it won.
	t.Run("RacingInsertsOneWinner", func(t *testing.T) {
		t.Parallel()
		k := counter("cas-race")
		const racers = 8
		won := make([]bool, racers)
		errs := race(racers, func(i int) error {
			mine := int64(100 + i)
			var err error
			for range 10 {
				var r driver.CASResult
				r, err = c.CompareAndSetCAS(ctx(t), &driver.CompareAndSetCASParams{
					Namespace: k.Namespace, Counter: k.Counter, Value: mine,
				})
				if errors.Is(err, driver.ErrUnknownOutcome) {
					continue
				}
				if err == nil {
					won[i] = r.Applied || r.Current == driver.CASValue{Exists: true, Value: mine}
				}
				return err
			}
			return err
		})
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		winner := slices.Index(won, true)
		if n := len(slices.DeleteFunc(slices.Clone(won), func(w bool) bool { return !w })); n != 1 {
			t.Fatalf("%d racers won, want exactly 1 (%v)", n, won)
		}
		wantCAS(t, c, k, driver.CASValue{Exists: true, Value: int64(100 + winner)})
	})

	// Eight goroutines each increment one counter 20 times with a
	// read-then-compare-and-set loop. A set that is not atomic with its
	// check lets two goroutines both move the counter from v to v+1, which
	// shows up as the same step claimed twice and a total below 160.
	//
	// Contending Paxos rounds may time out with an unknown outcome. The
	// goroutine then retries, so such an increment may have been applied
	// on top of the 160; the test accounts for it exactly: every step
	// 1..final must be claimed by one applied set, or else by an attempt
	// whose outcome was unknown, and the final value must exceed 160 by
	// exactly the number of steps the latter claim.
	t.Run("ConcurrentIncrementsExact", func(t *testing.T) {
		t.Parallel()
		k := counter("cas-incr")
		const workers, increments = 8, 20
		var (
			mu      sync.Mutex
			applied = map[int64]int{} // step -> worker whose set applied
			unknown = map[int64]bool{}
		)
		errs := race(workers, func(w int) error {
			var dupErr error // reported once the worker is done
			for done, attempts := 0, 0; done < increments; attempts++ {
				if attempts > 100*increments {
					return fmt.Errorf("worker %d: %d attempts for %d increments", w, attempts, increments)
				}
				cur, err := c.ReadCAS(ctx(t), &driver.ReadCASParams{Namespace: k.Namespace, Counter: k.Counter})
				if errors.Is(err, driver.ErrUnavailable) {
					continue // a serial read's Paxos round timed out; reading again is harmless
				}
				if err != nil {
					return fmt.Errorf("worker %d: ReadCAS: %w", w, err)
				}
				next := cur.Value + 1
				r, err := c.CompareAndSetCAS(ctx(t), &driver.CompareAndSetCASParams{
					Namespace: k.Namespace, Counter: k.Counter, Expect: cur, Value: next,
				})
				switch {
				case errors.Is(err, driver.ErrUnknownOutcome):
					mu.Lock()
					unknown[next] = true
					mu.Unlock()
				case err != nil:
					return fmt.Errorf("worker %d: CompareAndSetCAS: %w", w, err)
				case r.Applied:
					mu.Lock()
					if other, dup := applied[next]; dup {
						dupErr = fmt.Errorf("workers %d and %d both moved the counter to %d", other, w, next)
					}
					applied[next] = w
					mu.Unlock()
					done++
				case r.Current.Value <= cur.Value && r.Current.Exists == cur.Exists:
					return fmt.Errorf("worker %d: set %+v -> %d not applied, but current is %+v", w, cur, next, r.Current)
				}
			}
			return dupErr
		})
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		final := readCAS(t, c, k)
		if !final.Exists {
			t.Fatal("counter does not exist after the increments")
		}
		extra := 0
		for step := int64(1); step <= final.Value; step++ {
			if _, ok := applied[step]; ok {
				continue
			}
			if !unknown[step] {
				t.Errorf("step %d was claimed by no set", step)
			}
			extra++
		}
		if want := int64(workers*increments + extra); final.Value != want {
			t.Fatalf("final value %d, want %d (%d increments, %d more whose outcome was unknown)",
				final.Value, want, workers*increments, extra)
		}
		if len(unknown) > 0 {
			t.Logf("%d sets had an unknown outcome; %d of them were applied", len(unknown), extra)
		}
	})

	t.Run("CASClosed", func(t *testing.T) {
		c2 := capability[driver.CASCounters](t, openClosed(t, open))
		bg := context.Background()
		if _, err := c2.ReadCAS(bg, &driver.ReadCASParams{Namespace: "x", Counter: "y"}); !errors.Is(err, driver.ErrClosed) {
			t.Errorf("ReadCAS after Close: got %v, want ErrClosed", err)
		}
		if _, err := c2.CompareAndSetCAS(bg, &driver.CompareAndSetCASParams{Namespace: "x", Counter: "y", Value: 1}); !errors.Is(err, driver.ErrClosed) {
			t.Errorf("CompareAndSetCAS after Close: got %v, want ErrClosed", err)
		}
	})
}

func cas(t *testing.T, c driver.CASCounters, k driver.CounterKey, expect driver.CASValue, value int64) driver.CASResult {
	t.Helper()
	r, err := c.CompareAndSetCAS(ctx(t), &driver.CompareAndSetCASParams{
		Namespace: k.Namespace, Counter: k.Counter, Expect: expect, Value: value,
	})
	if err != nil {
		t.Fatalf("CompareAndSetCAS(%s/%s, expect %+v, %d): %v", k.Namespace, k.Counter, expect, value, err)
	}
	return r
}

func readCAS(t *testing.T, c driver.CASCounters, k driver.CounterKey) driver.CASValue {
	t.Helper()
	v, err := c.ReadCAS(ctx(t), &driver.ReadCASParams{Namespace: k.Namespace, Counter: k.Counter})
	if err != nil {
		t.Fatalf("ReadCAS(%s/%s): %v", k.Namespace, k.Counter, err)
	}
	return v
}

func wantCAS(t *testing.T, c driver.CASCounters, k driver.CounterKey, want driver.CASValue) {
	t.Helper()
	if got := readCAS(t, c, k); got != want {
		t.Fatalf("ReadCAS(%s/%s) = %+v, want %+v", k.Namespace, k.Counter, got, want)
	}
}
