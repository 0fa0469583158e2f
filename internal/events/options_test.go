package events

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
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

// The rollup epoch must trail the acknowledgement floor by RollupDelay:
// that gap is what keeps an acknowledged event out of any rollup that
// missed it.
func TestEpochTrailsAckFloor(t *testing.T) {
	t.Parallel()
	o := Options{AcceptWindow: time.Minute, Seal: 5 * time.Second, RollupDelay: 10 * time.Second}.WithDefaults()
	now := time.Unix(1_800_000_000, 0)
	if gap := o.ackFloor(now) - o.RollupEpoch(now); gap != (10 * time.Second).Microseconds() {
		t.Fatalf("gap %dµs", gap)
	}
	if o.ackFloor(now) <= o.acceptFloor(now) {
		t.Fatal("the seal window must lie inside the de-duplication horizon")
	}
}

// A rollup stores an int64: when the total at the target epoch is outside
// that range it must stop at the latest event time where the running total
// is inside it (every event at that time included), or not move at all.
func TestFoldStopsInsideInt64(t *testing.T) {
	t.Parallel()
	ev := func(at, d int64) driver.Event { return driver.Event{Time: at, ID: fmt.Sprint(at, d), Delta: d} }
	const maxI = math.MaxInt64
	for name, c := range map[string]struct {
		prev         driver.Rollup
		evs          []driver.Event
		epoch, value int64
		events       int
		ok           bool
	}{
		"in range":              {driver.Rollup{Value: -5, Epoch: 1}, []driver.Event{ev(5, 3), ev(3, -1), ev(4, 10)}, 100, 7, 3, true},
		"back in range at end":  {driver.Rollup{Value: maxI, Epoch: 1}, []driver.Event{ev(9, -5), ev(2, 1)}, 100, maxI - 4, 2, true},
		"out at end, stops":     {driver.Rollup{Value: 0, Epoch: 1}, []driver.Event{ev(3, 1), ev(2, maxI), ev(4, -1), ev(5, 2)}, 4, maxI, 3, true},
		"ties fold together":    {driver.Rollup{Value: 0, Epoch: 1}, []driver.Event{ev(2, maxI), ev(3, 1), ev(3, -1), ev(4, 1)}, 3, maxI, 3, true},
		"out from the first":    {driver.Rollup{Value: maxI, Epoch: 1}, []driver.Event{ev(2, 1), ev(3, 1)}, 1, maxI, 0, false},
		"below, then stays out": {driver.Rollup{Value: math.MinInt64, Epoch: 7}, []driver.Event{ev(8, -1)}, 7, math.MinInt64, 0, false},
	} {
		epoch, value, events, ok := fold(c.prev, 100, c.evs)
		if epoch != c.epoch || value != c.value || events != c.events || ok != c.ok {
			t.Errorf("%s: fold = epoch %d value %d events %d ok %v; want %d %d %d %v", name, epoch, value, events, ok, c.epoch, c.value, c.events, c.ok)
		}
	}
}
