package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// reference is the nearest-rank quantile of sorted, the definition
// Histogram.Quantile approximates.
func reference(sorted []time.Duration, q float64) time.Duration {
	rank := int(math.Ceil(q * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

var quantiles = []float64{0.0001, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 1}

// maxRelErr is the promised precision: a bucket is at most 1/64 of its
// lower bound wide and the midpoint is reported, so at most 1/128 off.
const maxRelErr = 1.0 / (2 * subBuckets)

func TestHistogramQuantilesMatchSortedReference(t *testing.T) {
	t.Parallel()
	dists := []struct {
		name string
		gen  func(r *rand.Rand) time.Duration
	}{
		{"exact range 0-127ns", func(r *rand.Rand) time.Duration { return time.Duration(r.IntN(128)) }},
		{"uniform 0-10ms", func(r *rand.Rand) time.Duration { return time.Duration(r.Int64N(int64(10 * time.Millisecond))) }},
		{"log-uniform 1µs-100s", func(r *rand.Rand) time.Duration {
			return time.Duration(math.Exp(math.Log(1e3) + r.Float64()*(math.Log(1e11)-math.Log(1e3))))
		}},
		{"log-normal around 1ms", func(r *rand.Rand) time.Duration {
			return time.Duration(math.Exp(math.Log(1e6) + r.NormFloat64()*1.5))
		}},
		{"bimodal 200µs and 40ms", func(r *rand.Rand) time.Duration {
			if r.IntN(100) < 3 {
				return 40*time.Millisecond + time.Duration(r.Int64N(int64(5*time.Millisecond)))
			}
			return 200*time.Microsecond + time.Duration(r.Int64N(int64(50*time.Microsecond)))
		}},
		{"constant", func(*rand.Rand) time.Duration { return 1234567 * time.Nanosecond }},
		{"huge", func(r *rand.Rand) time.Duration { return time.Duration(math.MaxInt64 - r.Int64N(1<<40)) }},
	}
	for i, d := range dists {
		for _, n := range []int{1, 7, 1000, 100_000} {
			r := rand.New(rand.NewPCG(uint64(i), uint64(n)))
			var h Histogram
			vals := make([]time.Duration, n)
			for j := range vals {
				vals[j] = d.gen(r)
				h.Record(vals[j])
			}
			slices.Sort(vals)
			if h.Count() != uint64(n) || h.Min() != vals[0] || h.Max() != vals[n-1] {
				t.Fatalf("%s n=%d: count/min/max = %d/%v/%v, want %d/%v/%v", d.name, n, h.Count(), h.Min(), h.Max(), n, vals[0], vals[n-1])
			}
			for _, q := range quantiles {
				want := reference(vals, q)
				got := h.Quantile(q)
				diff := math.Abs(float64(got) - float64(want))
				if diff > float64(want)*maxRelErr+0.5 {
					t.Errorf("%s n=%d q=%v: got %v, want %v (relative error %.4f > %.4f)",
						d.name, n, q, got, want, diff/float64(want), maxRelErr)
				}
				if want < 2*subBuckets && got != want {
					t.Errorf("%s n=%d q=%v: got %v, want exactly %v below %dns", d.name, n, q, got, want, 2*subBuckets)
				}
			}
		}
	}
}

func TestHistogramMergeEqualsOneHistogram(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	var whole Histogram
	parts := make([]Histogram, 8)
	var sum uint64
	for i := 0; i < 50_000; i++ {
		v := time.Duration(math.Exp(math.Log(1e5) + r.NormFloat64()*2))
		whole.Record(v)
		parts[r.IntN(len(parts))].Record(v)
		sum += uint64(v)
	}
	var merged Histogram
	merged.Merge(&Histogram{}) // merging an empty histogram changes nothing
	for i := range parts {
		merged.Merge(&parts[i])
	}
	if merged.Count() != whole.Count() || merged.Min() != whole.Min() || merged.Max() != whole.Max() || merged.Mean() != whole.Mean() {
		t.Fatalf("merged count/min/max/mean %d/%v/%v/%v, want %d/%v/%v/%v",
			merged.Count(), merged.Min(), merged.Max(), merged.Mean(), whole.Count(), whole.Min(), whole.Max(), whole.Mean())
	}
	if want := time.Duration(sum / whole.Count()); whole.Mean() != want {
		t.Errorf("mean %v, want %v", whole.Mean(), want)
	}
	for _, q := range quantiles {
		if g, w := merged.Quantile(q), whole.Quantile(q); g != w {
			t.Errorf("q=%v: merged %v, single %v", q, g, w)
		}
	}
}

func TestHistogramBuckets(t *testing.T) {
	t.Parallel()
	check := func(v uint64) {
		t.Helper()
		i := bucketOf(v)
		if i < 0 || i >= numBuckets {
			t.Fatalf("bucketOf(%d) = %d, outside [0,%d)", v, i, numBuckets)
		}
		lo, hi := bucketBounds(i)
		if v < lo || v > hi {
			t.Fatalf("bucketOf(%d) = %d with bounds [%d,%d]", v, i, lo, hi)
		}
		if width := hi - lo + 1; lo > 0 && float64(width-1) > float64(lo)/subBuckets {
			t.Fatalf("bucket %d [%d,%d] is wider than 1/%d of its bound", i, lo, hi, subBuckets)
		}
	}
	for v := uint64(0); v < 4096; v++ {
		check(v)
	}
	for s := 0; s < 64; s++ {
		p := uint64(1) << s
		check(p)
		check(p - 1)
		check(p + 1)
	}
	check(math.MaxUint64)
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100_000; i++ {
		check(r.Uint64() >> r.IntN(64))
	}
	// Buckets tile the number line: each starts right after the previous.
	for i := 1; i < numBuckets; i++ {
		_, prevHi := bucketBounds(i - 1)
		lo, _ := bucketBounds(i)
		if lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, bucket %d ends at %d", i, lo, i-1, prevHi)
		}
	}
	if _, hi := bucketBounds(numBuckets - 1); hi != math.MaxUint64 {
		t.Fatalf("last bucket ends at %d", hi)
	}
}

func TestHistogramEdgeCases(t *testing.T) {
	t.Parallel()
	var h Histogram
	if h.Quantile(0.5) != 0 || h.Mean() != 0 || h.Max() != 0 || h.Min() != 0 {
		t.Fatal("empty histogram must report zeros")
	}
	h.Record(-5 * time.Second)
	if h.Count() != 1 || h.Max() != 0 || h.Quantile(1) != 0 {
		t.Fatalf("negative duration: count %d max %v p100 %v, want it counted as 0", h.Count(), h.Max(), h.Quantile(1))
	}
	h.Record(time.Second)
	if h.Quantile(1) != time.Second {
		t.Fatalf("p100 = %v, want the exact max 1s", h.Quantile(1))
	}
	if h.Quantile(0) != 0 {
		t.Fatalf("p0 = %v, want the min 0", h.Quantile(0))
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	var h Histogram
	d := 750 * time.Microsecond
	for i := 0; b.Loop(); i++ {
		h.Record(d + time.Duration(i&1023))
	}
}

func TestHistogramCDF(t *testing.T) {
	t.Parallel()
	var empty Histogram
	if empty.CDF() != nil {
		t.Fatal("an empty histogram has a CDF")
	}
	r := rand.New(rand.NewPCG(7, 7))
	var h Histogram
	vals := make([]time.Duration, 50_000)
	for i := range vals {
		vals[i] = time.Duration(math.Exp(math.Log(1e5) + r.NormFloat64()))
		h.Record(vals[i])
	}
	slices.Sort(vals)
	cdf := h.CDF()
	if len(cdf) < 2 {
		t.Fatalf("%d points", len(cdf))
	}
	for i := 1; i < len(cdf); i++ {
		if cdf[i].Latency <= cdf[i-1].Latency || cdf[i].Fraction <= cdf[i-1].Fraction {
			t.Fatalf("not increasing at %d: %+v then %+v", i, cdf[i-1], cdf[i])
		}
	}
	if last := cdf[len(cdf)-1]; last.Fraction != 1 || last.Latency != h.Max() {
		t.Fatalf("last point %+v, want fraction 1 at the max %v", last, h.Max())
	}
	// Each point's fraction is exactly the share of values at or below
	// its latency: points sit on bucket upper bounds, so no value of a
	// later bucket can be at or below them.
	for _, p := range cdf {
		n, _ := slices.BinarySearch(vals, p.Latency+1)
		if got := float64(n) / float64(len(vals)); math.Abs(got-p.Fraction) > 1e-12 {
			t.Fatalf("at %v: fraction %v, but %v of the values are at or below it", p.Latency, p.Fraction, got)
		}
	}

	thin := ThinCDF(cdf, 0.05)
	if len(thin) >= len(cdf) || len(thin) < 2 {
		t.Fatalf("thinning %d points kept %d", len(cdf), len(thin))
	}
	if thin[0] != cdf[0] || thin[len(thin)-1] != cdf[len(cdf)-1] {
		t.Fatal("thinning lost the first or the last point")
	}
	for i := 1; i < len(thin)-1; i++ {
		if Nines(thin[i].Fraction)-Nines(thin[i-1].Fraction) < 0.05 && decades(thin[i].Latency)-decades(thin[i-1].Latency) < 0.05 {
			t.Fatalf("kept points %d and %d closer than the step on both scales: %+v %+v", i-1, i, thin[i-1], thin[i])
		}
	}
	if got := ThinCDF(cdf, 0); len(got) != len(cdf) {
		t.Fatal("a step of 0 dropped points")
	}
}

func TestNines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ f, want float64 }{{0, 0}, {0.9, 1}, {0.99, 2}, {0.999, 3}, {-1, 0}} {
		if got := Nines(tc.f); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Nines(%v) = %v, want %v", tc.f, got, tc.want)
		}
	}
	if !math.IsInf(Nines(1), 1) {
		t.Error("Nines(1) is not +Inf")
	}
}
