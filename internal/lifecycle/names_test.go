package lifecycle

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestStoredNamesRoundTrip(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for range 10_000 {
		counter := randomName(r)
		gen := r.Int64N(1 << 62)
		if r.IntN(4) == 0 {
			gen = 0
		}
		stored := StoredName(counter, gen)
		if gen == 0 && stored != counter {
			t.Fatalf("generation 0 of %q is stored as %q", counter, stored)
		}
		c, g, ok := SplitStored(stored)
		if !ok || c != counter || g != gen {
			t.Fatalf("SplitStored(StoredName(%q, %d)) = %q, %d, %v", counter, gen, c, g, ok)
		}
	}
}

// Generations of one counter sort in the order of their times, so a
// listing returns them in order.
func TestStoredNamesSortByGeneration(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for range 10_000 {
		counter := randomName(r)
		a, b := r.Int64N(1<<62)+1, r.Int64N(1<<62)+1
		if (StoredName(counter, a) < StoredName(counter, b)) != (a < b) {
			t.Fatalf("generations %d and %d of %q sort out of order", a, b, counter)
		}
	}
}

func TestMalformedStoredNamesAreRefused(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"c" + Separator,
		"c" + Separator + "1",
		"c" + Separator + "000000000000000G",
		"c" + Separator + "000000000000000A", // upper case: not what StoredName writes
		"c" + Separator + "0000000000000000", // generation 0 is the bare name
		"c" + Separator + "8000000000000000", // beyond int64
		"c" + Separator + "0000000000000001" + Separator + "0000000000000001",
		"c" + Separator + "00000000000000001",
	} {
		if c, g, ok := SplitStored(s); ok {
			t.Errorf("SplitStored(%q) = %q, %d, accepted", s, c, g)
		}
	}
}

// FuzzSplitStored feeds stored names as a listing returns them (anything
// a store holds): an accepted name is exactly what StoredName writes.
func FuzzSplitStored(f *testing.F) {
	f.Add("c")
	f.Add("c" + Separator + "0000000000000001")
	f.Add("c" + Separator + "7fffffffffffffff")
	f.Add(Separator)
	f.Fuzz(func(t *testing.T, stored string) {
		counter, gen, ok := SplitStored(stored)
		if !ok {
			return
		}
		if strings.Contains(counter, Separator) || gen < 0 {
			t.Fatalf("SplitStored(%q) = %q, %d", stored, counter, gen)
		}
		if again := StoredName(counter, gen); again != stored {
			t.Fatalf("SplitStored(%q) = %q, %d, which StoredName writes as %q", stored, counter, gen, again)
		}
	})
}

func randomName(r *rand.Rand) string {
	const alphabet = "ab:/-éz0\x00"
	n := 1 + r.IntN(12)
	var b strings.Builder
	for range n {
		b.WriteByte(alphabet[r.IntN(len(alphabet))])
	}
	return strings.ToValidUTF8(b.String(), "x")
}
