package crdt

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// Wide must agree with arbitrary-precision arithmetic across the int64
// edges, in both directions and back into range.
func TestWideMatchesBigInt(t *testing.T) {
	edges := []int64{math.MaxInt64, math.MinInt64, 1, -1, 0, -5, math.MaxInt64 - 1, math.MinInt64 + 1}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 2000 {
		var w Wide
		want := new(big.Int)
		for range rng.IntN(20) {
			d := edges[rng.IntN(len(edges))]
			if rng.IntN(3) == 0 {
				d = int64(rng.Uint64())
			}
			w.Add(d)
			want.Add(want, big.NewInt(d))
			if w.Big().Cmp(want) != 0 {
				t.Fatalf("round %d: Wide = %s, want %s", round, w, want)
			}
			v, ok := w.Int64()
			switch {
			case want.IsInt64():
				if !ok || v != want.Int64() {
					t.Fatalf("round %d: Int64() = %d, %v; want %s, true", round, v, ok, want)
				}
			case want.Sign() > 0:
				if ok || v != math.MaxInt64 {
					t.Fatalf("round %d: Int64() = %d, %v; want MaxInt64, false", round, v, ok)
				}
			default:
				if ok || v != math.MinInt64 {
					t.Fatalf("round %d: Int64() = %d, %v; want MinInt64, false", round, v, ok)
				}
			}
		}
		var sum Wide
		sum.AddWide(w)
		sum.AddWide(w)
		if twice := new(big.Int).Add(want, want); sum.Big().Cmp(twice) != 0 {
			t.Fatalf("round %d: AddWide: %s, want %s", round, sum, twice)
		}
	}
}
