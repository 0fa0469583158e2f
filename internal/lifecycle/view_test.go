package lifecycle

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// randomCuts makes cuts of counters "a" and "b" and of the namespace at
// times in 1..1000.
func randomCuts(r *rand.Rand) []driver.Cut {
	var cuts []driver.Cut
	for range r.IntN(8) {
		c := driver.Cut{At: 1 + r.Int64N(1000)}
		switch r.IntN(3) {
		case 0:
			c.Counter = "a"
		case 1:
			c.Counter = "b"
		}
		cuts = append(cuts, c)
	}
	return cuts
}

// For any cuts and TTL, every time belongs to exactly one generation: the
// generation starts at or before it, ends after it, and is the same for
// every time in between. A generation only moves forward with time.
func TestGenerationsPartitionTime(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	for range 2_000 {
		cuts := randomCuts(r)
		ttl := time.Duration(r.IntN(3)) * 170 * time.Microsecond
		v := NewView(time.Time{}, time.Time{}, cuts)
		prev := int64(0)
		for ts := int64(1); ts <= 1200; ts++ {
			g := v.Generation("a", ts, ttl)
			if g > ts {
				t.Fatalf("cuts %v ttl %v: generation %d at %d starts in the future", cuts, ttl, g, ts)
			}
			if g < prev {
				t.Fatalf("cuts %v ttl %v: generation went back from %d to %d at %d", cuts, ttl, prev, g, ts)
			}
			if g != prev { // a new generation starts exactly here
				if g != ts {
					t.Fatalf("cuts %v ttl %v: generation %d first seen at %d", cuts, ttl, g, ts)
				}
				if end := v.End("a", prev, ttl); end != ts {
					t.Fatalf("cuts %v ttl %v: generation %d ends at %d, but %d starts at %d", cuts, ttl, prev, end, g, ts)
				}
			}
			if end := v.End("a", g, ttl); end != 0 && end <= ts {
				t.Fatalf("cuts %v ttl %v: generation %d of %d ended at %d", cuts, ttl, g, ts, end)
			}
			prev = g
		}
	}
}

// Dropping what Unneeded returns changes no generation at or after
// settled, and the latest cut before it always stays.
func TestUnneededCutsDecideNothing(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	for range 2_000 {
		cuts := randomCuts(r)
		settled := r.Int64N(1100)
		drop := Unneeded(cuts, settled)
		kept := slices.DeleteFunc(slices.Clone(cuts), func(c driver.Cut) bool { return slices.Contains(drop, c) })
		before, after := NewView(time.Time{}, time.Time{}, cuts), NewView(time.Time{}, time.Time{}, kept)
		for _, counter := range []string{"a", "b", "c"} {
			for ts := settled; ts <= 1200; ts++ {
				if g, h := before.Generation(counter, ts, 0), after.Generation(counter, ts, 0); g != h {
					t.Fatalf("cuts %v settled %d: dropping %v moved %s's generation at %d from %d to %d", cuts, settled, drop, counter, ts, g, h)
				}
			}
		}
	}
}

func TestNamespaceDeletes(t *testing.T) {
	t.Parallel()
	v := NewView(time.Time{}, time.Time{}, []driver.Cut{{At: 50}, {At: 90, DeletesNamespace: true}, {At: 70, DeletesNamespace: true}})
	if v.Deleted(69) || !v.Deleted(70) || !v.Deleted(1000) || v.DeletedAt() != 70 {
		t.Fatalf("deleted at 69: %v, 70: %v; DeletedAt %d; want the earliest deleting cut, 70", v.Deleted(69), v.Deleted(70), v.DeletedAt())
	}
	if g := v.Generation("x", 60, 0); g != 50 {
		t.Fatalf("a namespace-wide cut starts every counter's generation: got %d, want 50", g)
	}
	if NewView(time.Time{}, time.Time{}, []driver.Cut{{At: 50}}).Deleted(100) {
		t.Fatal("a namespace-wide cut without the flag deleted the namespace")
	}
}

// A deleting cut deletes only the incarnation made before it: a namespace
// made again after it is not deleted by it, and is by a later one.
func TestDeletesBelongToAnIncarnation(t *testing.T) {
	t.Parallel()
	cuts := []driver.Cut{{At: 100, DeletesNamespace: true}, {At: 500, DeletesNamespace: true}}
	first := NewView(time.Time{}, time.UnixMicro(10), cuts)
	if first.DeletedAt() != 100 {
		t.Fatalf("the first incarnation is deleted at %d, want 100", first.DeletedAt())
	}
	again := NewView(time.Time{}, time.UnixMicro(300), cuts)
	if again.Deleted(300) || again.Deleted(499) || !again.Deleted(500) {
		t.Fatalf("the incarnation made at 300: deleted at %d, want 500", again.DeletedAt())
	}
	if NewView(time.Time{}, time.UnixMicro(600), cuts).Deleted(1_000) {
		t.Fatal("an incarnation made after every deleting cut is deleted")
	}
	if c := again.Cuts(); len(c) != 2 || !c[0].DeletesNamespace || !c[1].DeletesNamespace {
		t.Fatalf("the cuts come back as %+v, flags lost", c)
	}
}
