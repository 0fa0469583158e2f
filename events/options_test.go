package events

import (
	"testing"
	"time"
)

func TestBucketOf(t *testing.T) {
	t.Parallel()
	o := Options{Bucket: time.Hour}.WithDefaults()
	h := time.Hour.Microseconds()
	for _, c := range []struct{ t, want int64 }{
		{0, 0}, {1, 0}, {h - 1, 0}, {h, h}, {h + 1, h}, {5*h + 17, 5 * h},
		{-1, -h}, {-h, -h}, {-h - 1, -2 * h},
	} {
		if got := o.BucketOf(c.t); got != c.want {
			t.Errorf("BucketOf(%d) = %d, want %d", c.t, got, c.want)
		}
		if b := o.BucketOf(c.t); c.t < b || c.t > o.bucketLast(b) {
			t.Errorf("%d outside its bucket [%d, %d]", c.t, b, o.bucketLast(b))
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	if err := (Options{}).WithDefaults().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for name, o := range map[string]Options{
		"sub-second bucket":   {Bucket: 1500 * time.Millisecond},
		"negative window":     {AcceptWindow: -time.Second},
		"zero delay":          {RollupDelay: -1},
		"huge bucket":         {Bucket: 20 * 365 * 24 * time.Hour},
		"fractional future":   {FutureLimit: 1500 * time.Millisecond},
		"negative future cap": {FutureLimit: -time.Second},
	} {
		if err := o.WithDefaults().Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, o)
		}
	}
}

// The rollup epoch must trail the accept floor by RollupDelay: that gap
// is what keeps an acknowledged event out of any rollup that missed it.
func TestEpochTrailsAcceptFloor(t *testing.T) {
	t.Parallel()
	o := Options{AcceptWindow: time.Minute, RollupDelay: 10 * time.Second}.WithDefaults()
	now := time.Unix(1_800_000_000, 0)
	if gap := o.acceptFloor(now) - o.RollupEpoch(now); gap != (10 * time.Second).Microseconds() {
		t.Fatalf("gap %dµs", gap)
	}
}

func TestSumOverflow(t *testing.T) {
	t.Parallel()
	if _, err := sum(1<<62, eventDeltas{1 << 62, 1 << 62}.events()); err == nil {
		t.Fatal("overflow not reported")
	}
	if v, err := sum(-5, eventDeltas{3, -1, 10}.events()); err != nil || v != 7 {
		t.Fatalf("sum = %d, %v", v, err)
	}
}
