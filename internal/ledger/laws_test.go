package ledger

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
)

// The property tests are deterministic by default; pass -ledger.seed=N to
// explore other inputs. Each test logs the seed it used.
var seedFlag = flag.Uint64("ledger.seed", 20260301, "seed for the property tests")

func newRand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := *seedFlag
	t.Logf("seed %d (rerun with -ledger.seed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// lawTrials is how many random cases each property test checks: fewer in
// -short mode, which `make test` uses for its race-detector pass.
func lawTrials() int {
	if testing.Short() {
		return 200
	}
	return 2000
}

// forEachUniverse runs check lawTrials times, each on a fresh random
// universe, with the package's seeded rand.
func forEachUniverse(t *testing.T, check func(r *rand.Rand, u universe)) {
	t.Helper()
	t.Parallel()
	r := newRand(t)
	for range lawTrials() {
		check(r, randomUniverse(r))
	}
}

// A universe is what every actor ever appended: one log per actor and
// section. Any state the model produces holds, per actor, a view of that
// actor's logs — a folded prefix and the entries after it — because an
// actor id has exactly one writer. The generators produce only such views;
// TestJoinDetectsTwoWriters covers what happens otherwise.
type universe map[string][2][]Entry

func randomUniverse(r *rand.Rand) universe {
	u := universe{}
	for a := range 1 + r.IntN(4) {
		actor := fmt.Sprintf("actor-%d", a)
		var logs [2][]Entry
		for s := range logs {
			for i := range r.IntN(12) {
				logs[s] = append(logs[s], Entry{RequestID: fmt.Sprintf("%s/%d/%d", actor, s, i), Amount: 1 + r.Int64N(1000)})
			}
		}
		u[actor] = logs
	}
	return u
}

// view is the section of a log after seq entries were appended, of which
// the first folded were folded into the total.
func view(log []Entry, folded, seq int) Section {
	s := Section{Folded: uint64(folded)}
	for _, e := range log[:folded] {
		s.Total += e.Amount
	}
	if seq > folded {
		s.History = append([]Entry(nil), log[folded:seq]...)
	}
	return s
}

func randomView(r *rand.Rand, log []Entry) Section {
	seq := r.IntN(len(log) + 1)
	return view(log, r.IntN(seq+1), seq)
}

func randomActor(r *rand.Rand, logs [2][]Entry) *Actor {
	return &Actor{P: randomView(r, logs[0]), N: randomView(r, logs[1])}
}

// randomState holds a random subset of the universe's actors, each at a
// random view.
func randomState(r *rand.Rand, u universe) *State {
	s := NewState()
	for actor, logs := range u {
		if r.IntN(3) > 0 {
			s.Set(actor, randomActor(r, logs))
		}
	}
	return s
}

func merged(t *testing.T, states ...*State) *State {
	t.Helper()
	out := NewState()
	for _, s := range states {
		if err := out.Merge(s); err != nil {
			t.Fatalf("Merge: %v", err)
		}
	}
	return out
}

func requireEqual(t *testing.T, what string, got, want *State) {
	t.Helper()
	if !got.Equal(want) {
		t.Fatalf("%s differ:\n got %s\nwant %s", what, dump(got), dump(want))
	}
}

func dump(s *State) string {
	out := ""
	for _, id := range s.Actors() {
		out += fmt.Sprintf("%s=%+v ", id, *s.Actor(id))
	}
	return out
}

func TestMergeCommutative(t *testing.T) {
	forEachUniverse(t, func(r *rand.Rand, u universe) {
		a, b := randomState(r, u), randomState(r, u)
		requireEqual(t, "a+b and b+a", merged(t, a, b), merged(t, b, a))
	})
}

func TestMergeAssociative(t *testing.T) {
	forEachUniverse(t, func(r *rand.Rand, u universe) {
		a, b, c := randomState(r, u), randomState(r, u), randomState(r, u)
		left := merged(t, merged(t, a, b), c)
		right := merged(t, a, merged(t, b, c))
		requireEqual(t, "(a+b)+c and a+(b+c)", left, right)
	})
}

// Unlike a sum, merging the same rows twice (a reader that sees one row on
// two replicas, a retried read) changes nothing.
func TestMergeIdempotent(t *testing.T) {
	forEachUniverse(t, func(r *rand.Rand, u universe) {
		a := randomState(r, u)
		requireEqual(t, "a+a and a", merged(t, a, a.Clone()), a)
		self := a.Clone()
		if err := self.Merge(self); err != nil {
			t.Fatal(err)
		}
		requireEqual(t, "a+a (same pointer) and a", self, a)
		ab := merged(t, a, randomState(r, u))
		requireEqual(t, "(a+b)+a and a+b", merged(t, ab, a), ab)
	})
}

// The join of two views of one log is the view with the longest log and
// the longest folded prefix: nothing an actor appended is lost or counted
// twice, whichever versions of its row meet.
func TestJoinIsTheLatestView(t *testing.T) {
	forEachUniverse(t, func(r *rand.Rand, u universe) {
		log := u["actor-0"][0]
		s1, s2 := r.IntN(len(log)+1), r.IntN(len(log)+1)
		f1, f2 := r.IntN(s1+1), r.IntN(s2+1)
		a, b := view(log, f1, s1), view(log, f2, s2)
		got, err := joinSections(&a, &b)
		if err != nil {
			t.Fatalf("join of two views of one log: %v", err)
		}
		want := view(log, max(f1, f2), max(s1, s2))
		if !got.equal(&want) {
			t.Fatalf("join(%+v, %+v) = %+v, want %+v", a, b, got, want)
		}
	})
}

// Compaction (the overflow rule) is a normalisation, not part of the join:
// it keeps the value, lands on a later view of the same log (so merging
// the original back in changes nothing), and gives the same result
// whether it runs before or after a merge.
func TestCompactionLaws(t *testing.T) {
	forEachUniverse(t, func(r *rand.Rand, u universe) {
		keep := r.IntN(5)
		a, b := randomState(r, u), randomState(r, u)
		ca := compacted(a, keep)

		va, err := a.Value()
		if err != nil {
			t.Fatal(err)
		}
		if vc, _ := ca.Value(); vc != va {
			t.Fatalf("compaction changed the value from %d to %d", va, vc)
		}
		requireEqual(t, "a + compact(a) and compact(a)", merged(t, a, ca), ca)
		requireEqual(t, "compact(compact(a)) and compact(a)", compacted(ca, keep), ca)
		requireEqual(t, "compact(a+b) and compact(compact(a)+b)",
			compacted(merged(t, a, b), keep), compacted(merged(t, ca, b), keep))
		for _, id := range ca.Actors() {
			for _, sec := range []*Section{&ca.Actor(id).P, &ca.Actor(id).N} {
				if len(sec.History) > keep {
					t.Fatalf("compact(%d) left %d entries", keep, len(sec.History))
				}
			}
		}
	})
}

func compacted(s *State, keep int) *State {
	c := s.Clone()
	for _, id := range c.Actors() {
		c.Actor(id).Compact(keep)
	}
	return c
}

// The value of a merge is the sum of the actors' latest views: merging
// never counts an entry twice.
func TestMergedValueCountsEachEntryOnce(t *testing.T) {
	forEachUniverse(t, func(r *rand.Rand, u universe) {
		a, b := randomState(r, u), randomState(r, u)
		m := merged(t, a, b)
		var want int64
		for _, id := range m.Actors() {
			for i, sec := range []*Section{&m.Actor(id).P, &m.Actor(id).N} {
				for _, e := range u[id][i][:sec.Seq()] {
					if i == 0 {
						want += e.Amount
					} else {
						want -= e.Amount
					}
				}
			}
		}
		if got, _ := m.Value(); got != want {
			t.Fatalf("value %d, want %d", got, want)
		}
	})
}

// Two processes writing under one actor id produce versions that are not
// views of one log. The join refuses them instead of silently dropping
// one writer's entries.
func TestJoinDetectsTwoWriters(t *testing.T) {
	t.Parallel()
	e := func(id string, amt int64) Entry { return Entry{RequestID: id, Amount: amt} }
	cases := []struct {
		name string
		a, b Section
	}{
		{"same number, different request", Section{History: []Entry{e("x", 1)}}, Section{History: []Entry{e("y", 1)}}},
		{"same number, different amount", Section{History: []Entry{e("x", 1)}}, Section{History: []Entry{e("x", 2)}}},
		{"same fold, different totals", Section{Total: 5, Folded: 1}, Section{Total: 6, Folded: 1}},
		{"fold does not add up", Section{History: []Entry{e("x", 3), e("y", 4)}}, Section{Total: 4, Folded: 1, History: []Entry{e("y", 4)}}},
		{"later fold smaller than what it must contain", Section{Total: 10, Folded: 2}, Section{Total: 11, Folded: 5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, order := range [][2]*Section{{&tc.a, &tc.b}, {&tc.b, &tc.a}} {
				if _, err := joinSections(order[0], order[1]); !errors.Is(err, ErrActorConflict) {
					t.Fatalf("join(%+v, %+v): got %v, want ErrActorConflict", *order[0], *order[1], err)
				}
			}
		})
	}
	// A state merge reports the conflict and leaves the receiver alone.
	s := NewState()
	s.Set("a", &Actor{P: cases[0].a})
	o := NewState()
	o.Set("a", &Actor{P: cases[0].b})
	before := s.Clone()
	if err := s.Merge(o); !errors.Is(err, ErrActorConflict) {
		t.Fatalf("Merge: got %v, want ErrActorConflict", err)
	}
	requireEqual(t, "state after a failed merge and before", s, before)
}

// The merge laws with folds. A fold passes actors that will never write
// again, so its base counts their whole logs. foldedUniverse gives the
// bases a history of folds could leave: fold k passes actors 0..k-1.
func foldedBases(u universe) []Base {
	bases := []Base{{}}
	var p, n int64
	for k := range len(u) {
		logs := u[fmt.Sprintf("actor-%d", k)]
		for _, e := range logs[0] {
			p += e.Amount
		}
		for _, e := range logs[1] {
			n += e.Amount
		}
		bases = append(bases, Base{Version: uint64(k + 1), Cut: fmt.Sprintf("actor-%d", k+1), P: p, N: n})
	}
	return bases
}

// randomFoldedState is what a reader may see: some fold's base, and views
// of some of the actors at or above its cut.
func randomFoldedState(r *rand.Rand, u universe) *State {
	bases := foldedBases(u)
	s := randomState(r, u)
	s.base = bases[r.IntN(len(bases))]
	for _, id := range s.Actors() {
		if id < s.base.Cut {
			delete(s.actors, id)
		}
	}
	return s
}

func TestMergeLawsWithFolds(t *testing.T) {
	forEachUniverse(t, func(r *rand.Rand, u universe) {
		a, b, c := randomFoldedState(r, u), randomFoldedState(r, u), randomFoldedState(r, u)
		requireEqual(t, "a+b and b+a", merged(t, a, b), merged(t, b, a))
		requireEqual(t, "(a+b)+c and a+(b+c)", merged(t, merged(t, a, b), c), merged(t, a, merged(t, b, c)))
		requireEqual(t, "a+a and a", merged(t, a, a.Clone()), a)
		if m := merged(t, a, b); m.base.Version != max(a.base.Version, b.base.Version) {
			t.Fatalf("merged base v%d, want the later of v%d and v%d", m.base.Version, a.base.Version, b.base.Version)
		}
	})
}

// A fold never changes the value: whichever base a reader pairs with the
// actors at or above its cut, a reader that sees every actor's whole log
// reads the universe's total, and merging it with any other reader's
// view changes nothing.
func TestFoldKeepsTheValue(t *testing.T) {
	forEachUniverse(t, func(r *rand.Rand, u universe) {
		var want int64
		for _, logs := range u {
			for _, e := range logs[0] {
				want += e.Amount
			}
			for _, e := range logs[1] {
				want -= e.Amount
			}
		}
		for _, b := range foldedBases(u) {
			full := &State{actors: map[string]*Actor{}, base: b}
			for id, logs := range u {
				if id >= b.Cut {
					full.Set(id, &Actor{P: view(logs[0], 0, len(logs[0])), N: view(logs[1], 0, len(logs[1]))})
				}
			}
			for _, st := range []*State{full, merged(t, full, randomFoldedState(r, u)), merged(t, randomFoldedState(r, u), full)} {
				if got, err := st.Value(); err != nil || got != want {
					t.Fatalf("value over %v = %d, %v; want %d", b, got, err, want)
				}
			}
		}
	})
}

// Two different bases of one version cannot both have won a
// compare-and-set: a merge that meets them refuses rather than pick one.
func TestMergeRefusesTwoBasesOfOneVersion(t *testing.T) {
	t.Parallel()
	a, b := NewState(), NewState()
	a.base = Base{Version: 2, Cut: "x", P: 5}
	b.base = Base{Version: 2, Cut: "x", P: 6}
	if err := a.Merge(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Merge of two bases of version 2 = %v, want ErrCorrupt", err)
	}
	if a.base.P != 5 {
		t.Fatalf("a refused merge changed the state: %v", a.base)
	}
}
