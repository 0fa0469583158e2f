package bench

import (
	"math"
	"math/bits"
	"time"
)

// The histogram is log-linear, like HdrHistogram: every power of two is
// split into subBuckets equal-width buckets. A bucket's width is at most
// 1/subBuckets of its lower bound, and a percentile is reported as its
// bucket's midpoint, so the relative error is at most 1/(2*subBuckets),
// about 0.8%. Values below 2*subBuckets nanoseconds are counted exactly.
//
// One histogram is owned by one worker goroutine, so recording is a plain
// array increment: no atomics, no locks, no allocation, and nothing shared
// between cores. Run merges the workers' histograms once at the end.
const (
	subBucketBits = 6
	subBuckets    = 1 << subBucketBits // 64
	// A uint64 has 64 bits; values with bit length L use shift L-subBucketBits-1,
	// so the largest shift is 64-subBucketBits-1 and the number of buckets is
	// (largest shift + 2) * subBuckets.
	numBuckets = (64 - subBucketBits + 1) * subBuckets
)

// Histogram counts durations in log-linear buckets. The zero value is
// empty and ready to use. It is not safe for concurrent use: give every
// goroutine its own and Merge them.
type Histogram struct {
	counts [numBuckets]uint64
	n      uint64
	sum    uint64 // nanoseconds; wraps only after ~584 years of summed latency
	min    uint64
	max    uint64
}

// bucketOf returns the bucket index of v (nanoseconds).
func bucketOf(v uint64) int {
	if v < subBuckets {
		return int(v)
	}
	shift := bits.Len64(v) - subBucketBits - 1
	return (shift+1)*subBuckets + int(v>>uint(shift)) - subBuckets
}

// bucketBounds returns the smallest and largest value counted in bucket i.
func bucketBounds(i int) (lo, hi uint64) {
	if i < 2*subBuckets {
		return uint64(i), uint64(i)
	}
	shift := uint(i/subBuckets - 1)
	lo = uint64(i%subBuckets+subBuckets) << shift
	return lo, lo + (uint64(1) << shift) - 1
}

// Record adds one observation. Negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := uint64(max(d, 0))
	h.counts[bucketOf(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += v
}

// Merge adds every observation of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// Count returns the number of observations.
func (h *Histogram) Count() uint64 { return h.n }

// Min and Max return the exact extremes (0 when empty).
func (h *Histogram) Min() time.Duration { return time.Duration(h.min) }

// Max returns the largest observation, exactly (0 when empty).
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Mean returns the exact mean (0 when empty).
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / h.n)
}

// Quantile returns the q-quantile (0 < q <= 1) by the nearest-rank
// definition: the smallest observation such that at least q of all
// observations are at or below it, within the histogram's precision. It
// returns 0 when the histogram is empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen < rank {
			continue
		}
		lo, hi := bucketBounds(i)
		mid := lo + (hi-lo)/2
		// The exact extremes are known, so the answer never leaves them;
		// this makes p100 exact and keeps tiny samples honest.
		return time.Duration(min(max(mid, h.min), h.max))
	}
	return time.Duration(h.max) // unreachable: the counts add up to n
}

// CDFPoint is one step of a latency distribution: Fraction of the
// observations took at most Latency.
type CDFPoint struct {
	Latency  time.Duration `json:"latency_ns"`
	Fraction float64       `json:"fraction"`
}

// CDF returns the cumulative distribution, one point per non-empty bucket
// in increasing order of latency: the bucket's upper bound (clamped to the
// exact maximum) and the fraction of observations at or below it. The last
// point has Fraction 1. It returns nil when the histogram is empty.
func (h *Histogram) CDF() []CDFPoint {
	if h.n == 0 {
		return nil
	}
	var (
		out  []CDFPoint
		seen uint64
	)
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		seen += c
		_, hi := bucketBounds(i)
		out = append(out, CDFPoint{Latency: time.Duration(min(hi, h.max)), Fraction: float64(seen) / float64(h.n)})
	}
	return out
}

// Nines maps a cumulative fraction to the "number of nines" scale that
// latency plots use so tails stay visible: 0.9 is 1, 0.99 is 2, 0.999 is 3.
// Fractions of 1 (or more) map to +Inf.
func Nines(f float64) float64 {
	if f >= 1 {
		return math.Inf(1)
	}
	return -math.Log10(1 - max(f, 0))
}

// ThinCDF keeps the points of cdf at which, since the last kept point,
// the fraction rose by at least step on the Nines scale or the latency by
// at least step decades, plus the first and the last point. A CDF of tens
// of thousands of observations then fits in a report, with the resolution
// a log-latency, nines-fraction plot can show. step <= 0 keeps every point.
func ThinCDF(cdf []CDFPoint, step float64) []CDFPoint {
	if step <= 0 || len(cdf) <= 2 {
		return cdf
	}
	out := []CDFPoint{cdf[0]}
	last := cdf[0]
	for i, p := range cdf[1:] {
		if i+1 == len(cdf)-1 {
			out = append(out, p)
			break
		}
		if Nines(p.Fraction)-Nines(last.Fraction) >= step || decades(p.Latency)-decades(last.Latency) >= step {
			out = append(out, p)
			last = p
		}
	}
	return out
}

// decades is log10 of d in nanoseconds (0 for 1ns and below).
func decades(d time.Duration) float64 { return math.Log10(float64(max(d, 1))) }
