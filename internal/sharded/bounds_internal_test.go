package sharded

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/randomid"
)

// The read bound rests on these orderings of ids: new ids sort by expiry,
// boundFor(ts) separates the shards expiring before ts from the others, and
// the ids of earlier releases and the anchor sort above every bound.
func TestShardIDsSortByExpiry(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10_000 {
		a, b := rng.Int64N(math.MaxInt64-1)+1, rng.Int64N(math.MaxInt64-1)+1
		if rng.IntN(4) == 0 {
			b = a + 1 // neighbours, where a carry could go wrong
		}
		if a > b {
			a, b = b, a
		}
		ida, idb := ShardID(a), ShardID(b)
		if a < b && ida >= idb {
			t.Fatalf("ShardID(%d) = %s is not below ShardID(%d) = %s", a, ida, b, idb)
		}
		if bound := boundFor(b); bound > idb || ida >= bound && a < b {
			t.Fatalf("boundFor(%d) = %s does not separate %s (expires %d) from %s (expires %d)", b, bound, ida, a, idb, b)
		}
		if old := randomid.Hex(16); old <= boundFor(b) || old >= anchorID {
			t.Fatalf("an id of an earlier release, %s, does not sort between every bound and the anchor", old)
		}
		if !hasExpiryLayout(idb) || hasExpiryLayout(randomid.Hex(16)) || hasExpiryLayout(anchorID) {
			t.Fatalf("hasExpiryLayout: %s should have the layout, an old id and the anchor should not", idb)
		}
		if len(boundFor(b)) != len(idb) {
			t.Fatalf("boundFor(%d) = %s is not as long as a shard id (%s)", b, boundFor(b), idb)
		}
		if idb >= anchorID {
			t.Fatalf("ShardID(%d) = %s does not sort below the anchor", b, idb)
		}
	}
	for _, hex := range []string{"0", "9", "a", "f"} {
		if boundFor(math.MaxInt64) >= hex {
			t.Fatalf("boundFor(MaxInt64) = %s is not below an old id starting %q", boundFor(math.MaxInt64), hex)
		}
	}
}

func TestBoundsLearnFromReads(t *testing.T) {
	t.Parallel()
	var b bounds
	b.init(3)
	key := func(i int) driver.CounterKey { return driver.CounterKey{Namespace: "ns", Counter: fmt.Sprint(i)} }
	b.learn(key(0), 50, true, false) // GC adds while there is room
	b.learn(key(0), 40, false, true) // a bounded read may not lower it
	if got := b.get(key(0)).ts; got != 50 {
		t.Fatalf("bound after a lower bounded read = %d, want 50", got)
	}
	b.learn(key(0), 60, false, false)
	if got := b.get(key(0)); got.ts != 60 || got.from != boundFor(60) {
		t.Fatalf("bound after a higher read = %+v, want 60", got)
	}
	b.learn(key(0), 30, true, true) // a whole-partition read replaces it
	if got := b.get(key(0)).ts; got != 30 {
		t.Fatalf("bound after a lower whole-partition read = %d, want 30", got)
	}
	b.learn(key(1), 1, true, true)
	b.learn(key(2), 2, true, true)
	b.learn(key(3), 3, true, false) // full: GC does not push a bound out
	if got := b.get(key(3)).ts; got != 0 || len(b.byCounter) != 3 {
		t.Fatalf("GC added a bound to a full map (%d kept)", len(b.byCounter))
	}
	for i := 3; i < 10; i++ {
		b.learn(key(i), int64(i), true, true)
		if n := len(b.byCounter); n > 3 {
			t.Fatalf("%d bounds kept, limit 3", n)
		}
		if got := b.get(key(i)).ts; got != int64(i) {
			t.Fatalf("bound just learnt = %d, want %d", got, i)
		}
	}
}
