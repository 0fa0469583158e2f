package crdt

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Readers and garbage collectors merge shards in whatever order they arrive,
// so every kind must give the same answer for any order and grouping. The
// comparison includes the encoding: racing collectors must write identical
// tallies.

func lawTrials(k Kind) int {
	if k == KindDistinct {
		return 40 // each trial may build sketches of ~16k items
	}
	return 300
}

// forEachKindTrial runs, for each kind in a parallel subtest of its own, a
// heavy property check trials(k) times with the package's seeded rand.
func forEachKindTrial(t *testing.T, kinds []Kind, trials func(Kind) int, check func(t *testing.T, r *rand.Rand, k Kind)) {
	t.Helper()
	t.Parallel()
	skipHeavyInShort(t)
	for _, k := range kinds {
		t.Run(k.String(), func(t *testing.T) {
			t.Parallel()
			r := newRand(t)
			for range trials(k) {
				check(t, r, k)
			}
		})
	}
}

func TestMergeCommutative(t *testing.T) {
	forEachKindTrial(t, allKinds, lawTrials, func(t *testing.T, r *rand.Rand, k Kind) {
		a, b := randomState(t, r, k), randomState(t, r, k)
		requireSame(t, "a+b vs b+a", merged(t, a, b), merged(t, b, a))
	})
}

func TestMergeAssociative(t *testing.T) {
	forEachKindTrial(t, allKinds, lawTrials, func(t *testing.T, r *rand.Rand, k Kind) {
		a, b, c := randomState(t, r, k), randomState(t, r, k), randomState(t, r, k)
		left := merged(t, merged(t, a, b), c)
		right := merged(t, a, merged(t, b, c))
		requireSame(t, "(a+b)+c vs a+(b+c)", left, right)
	})
}

func TestMergeIdempotent(t *testing.T) {
	forEachKindTrial(t, []Kind{KindMax, KindMin, KindDistinct}, lawTrials, func(t *testing.T, r *rand.Rand, k Kind) {
		a := randomState(t, r, k)
		requireSame(t, "a+copy(a) vs a", merged(t, a, a.Clone()), a)
		self := a.Clone()
		requireSame(t, "a+a (same pointer) vs a", mustMerge(t, self, self), a)
		// Merging a state in again after more merges changes nothing.
		ab := merged(t, a, randomState(t, r, k))
		requireSame(t, "(a+b)+a vs a+b", merged(t, ab, a), ab)
	})
}

// Sum is deliberately not idempotent: the model relies on each shard being
// merged exactly once, and a test pins that down so nobody "fixes" it.
func TestSumMergeIsNotIdempotent(t *testing.T) {
	t.Parallel()
	a := &Sum{}
	mustApply(t, a, Op{Delta: 10}, Op{Delta: -3})
	mustMerge(t, a, a)
	if a.Value() != 14 || a.P() != 20 || a.N() != 6 {
		t.Fatalf("a+a = %d (P=%d N=%d), want 14 (P=20 N=6)", a.Value(), a.P(), a.N())
	}
}

// Splitting one stream of updates across shards and merging the shards must
// give exactly the state a single writer would have reached. For sum this is
// the core claim of the sharded model.
func TestShardsEqualSingleState(t *testing.T) {
	quarter := func(k Kind) int { return lawTrials(k) / 4 }
	forEachKindTrial(t, allKinds, quarter, func(t *testing.T, r *rand.Rand, k Kind) {
		single := mustNew(t, k)
		shards := make([]State, 1+r.IntN(8))
		for i := range shards {
			shards[i] = mustNew(t, k)
		}
		for n := randomOpCount(r, k) * 3; n > 0; n-- {
			op := randomOp(r, k)
			mustApply(t, single, op)
			mustApply(t, shards[r.IntN(len(shards))], op)
		}
		tally := mustNew(t, k)
		for _, i := range r.Perm(len(shards)) {
			mustMerge(t, tally, shards[i])
		}
		requireSame(t, "merged shards vs single writer", tally, single)
	})
}

func TestSumMergeOverflowIsSymmetric(t *testing.T) {
	t.Parallel()
	a := mustApply(t, &Sum{}, Op{Delta: math.MaxInt64})
	b := mustApply(t, &Sum{}, Op{Delta: 1})
	if err1, err2 := a.Clone().Merge(b), b.Clone().Merge(a); err1 == nil || err2 == nil {
		t.Fatalf("a+b: %v, b+a: %v; want ErrOverflow both ways", err1, err2)
	}
}

func withinPct(got, want int64, pct float64) bool {
	return math.Abs(float64(got-want)) <= float64(want)*pct/100
}

func TestDistinctAccuracy(t *testing.T) {
	t.Parallel()
	skipHeavyInShort(t)
	const n = 100_000
	d := NewDistinct()
	for i := range n {
		mustApply(t, d, Op{Item: item(i)})
	}
	// Repeats must not count.
	for i := range n / 2 {
		mustApply(t, d, Op{Item: item(i)})
	}
	if got := d.Value(); !withinPct(got, n, 3) {
		t.Fatalf("estimate %d for %d distinct items, want within 3%%", got, n)
	}
	t.Logf("estimate %d for %d distinct items", d.Value(), n)
}

func TestDistinctMergeEstimatesUnion(t *testing.T) {
	t.Parallel()
	skipHeavyInShort(t)
	a, b, all := NewDistinct(), NewDistinct(), NewDistinct()
	for i := range 60_000 {
		mustApply(t, a, Op{Item: item(i)})
	}
	for i := 40_000; i < 100_000; i++ {
		mustApply(t, b, Op{Item: item(i)})
	}
	for i := range 100_000 {
		mustApply(t, all, Op{Item: item(i)})
	}
	u := merged(t, a, b)
	if got := u.Value(); !withinPct(got, 100_000, 3) {
		t.Fatalf("union estimate %d, want 100000 within 3%% (a=%d, b=%d)", got, a.Value(), b.Value())
	}
	// The union of sketches is exactly the sketch of the union.
	requireSame(t, "a+b vs sketch of all items", u, all)
}
