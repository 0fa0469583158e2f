package cassandra_test

import (
	"math"
	"testing"

	"github.com/abacusdb/abacus/driver"
)

// TestNativeOverflowWraps pins down the one place where the drivers'
// native counters differ on purpose: Cassandra adds counter deltas as Java
// longs, so going past the int64 range wraps around without an error (the
// embedded driver refuses such an add).
func TestNativeOverflowWraps(t *testing.T) {
	t.Parallel()
	d := open(t, testConfig(t))
	ctx := ctxT(t)
	p := &driver.AddNativeParams{Namespace: "n", Counter: "c", Delta: math.MaxInt64}
	for _, delta := range []int64{math.MaxInt64, 1} {
		p.Delta = delta
		if err := d.AddNative(ctx, p); err != nil {
			t.Fatalf("AddNative(%d): %v", delta, err)
		}
	}
	got, err := d.ReadNative(ctx, &driver.ReadNativeParams{Namespace: "n", Counter: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if got != math.MinInt64 {
		t.Fatalf("MaxInt64 + 1 read back as %d, want the wrapped %d", got, int64(math.MinInt64))
	}
}
