package crdt

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The property tests are deterministic by default; pass -crdt.seed=N to
// explore other inputs. Each test logs the seed it used.
var seedFlag = flag.Uint64("crdt.seed", 20260101, "seed for the property tests")

func newRand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := *seedFlag
	t.Logf("seed %d (rerun with -crdt.seed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

var allKinds = []Kind{KindSum, KindMax, KindMin, KindDistinct}

func mustNew(t testing.TB, k Kind) State {
	t.Helper()
	s, err := New(k)
	if err != nil {
		t.Fatalf("New(%v): %v", k, err)
	}
	return s
}

func mustEncode(t testing.TB, s State) []byte {
	t.Helper()
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatalf("MarshalBinary(%v): %v", s.Kind(), err)
	}
	return b
}

func mustDecode(t testing.TB, b []byte) State {
	t.Helper()
	s, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode(% x...): %v", b[:min(len(b), 32)], err)
	}
	return s
}

func mustApply(t testing.TB, s State, ops ...Op) State {
	t.Helper()
	for _, op := range ops {
		if err := s.Apply(op); err != nil {
			t.Fatalf("Apply(%+v) to %v: %v", op, s.Kind(), err)
		}
	}
	return s
}

func mustMerge(t testing.TB, dst, src State) State {
	t.Helper()
	if err := dst.Merge(src); err != nil {
		t.Fatalf("Merge %v: %v", dst.Kind(), err)
	}
	return dst
}

// merged returns a fresh state equal to a merged with b, leaving both alone.
func merged(t testing.TB, a, b State) State {
	t.Helper()
	return mustMerge(t, a.Clone(), b)
}

// requireSame fails unless a and b have the same kind, value, emptiness and
// encoding.
func requireSame(t testing.TB, what string, a, b State) {
	t.Helper()
	if a.Kind() != b.Kind() || a.Value() != b.Value() || a.Empty() != b.Empty() {
		t.Fatalf("%s: (%v, value %d, empty %v) != (%v, value %d, empty %v)",
			what, a.Kind(), a.Value(), a.Empty(), b.Kind(), b.Value(), b.Empty())
	}
	if ea, eb := mustEncode(t, a), mustEncode(t, b); !bytes.Equal(ea, eb) {
		t.Fatalf("%s: same value %d but encodings differ (%d vs %d bytes)", what, a.Value(), len(ea), len(eb))
	}
}

func item(i int) []byte { return fmt.Appendf(nil, "item-%d", i) }

// randomOp returns an update suited to kind k. Sum deltas stay small enough
// that a few hundred of them cannot overflow; the overflow edges have their
// own tests.
func randomOp(r *rand.Rand, k Kind) Op {
	switch k {
	case KindSum:
		return Op{Delta: r.Int64N(2_000_000_000_001) - 1_000_000_000_000}
	case KindMax, KindMin:
		switch r.IntN(10) {
		case 0:
			return Op{Delta: math.MinInt64}
		case 1:
			return Op{Delta: math.MaxInt64}
		case 2, 3, 4:
			return Op{Delta: r.Int64N(21) - 10}
		default:
			return Op{Delta: int64(r.Uint64())}
		}
	default:
		// A shared universe makes the item sets of different states overlap.
		return Op{Item: item(r.IntN(30_000))}
	}
}

// randomOpCount picks how many updates a random state gets. For distinct it
// spans empty, sparse and dense sketches (the library goes dense at roughly
// 8,000 items at precision 14).
func randomOpCount(r *rand.Rand, k Kind) int {
	switch r.IntN(5) {
	case 0:
		return 0
	case 1:
		return 1 + r.IntN(5)
	}
	if k != KindDistinct {
		return r.IntN(200)
	}
	if r.IntN(2) == 0 {
		return r.IntN(3_000)
	}
	return 6_000 + r.IntN(10_000)
}

func randomState(t testing.TB, r *rand.Rand, k Kind) State {
	t.Helper()
	s := mustNew(t, k)
	for n := randomOpCount(r, k); n > 0; n-- {
		mustApply(t, s, randomOp(r, k))
	}
	return s
}

// skipHeavyInShort skips size-heavy tests of the merge arithmetic in -short
// mode. `make test` runs this package twice: under the race detector with
// -short, where only tests that exercise concurrency matter and sketches of
// tens of thousands of items cost minutes, and then in full without -race.
func skipHeavyInShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("size-heavy property test: runs in the full test run (without -short)")
	}
}
