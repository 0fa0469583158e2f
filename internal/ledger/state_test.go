package ledger

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func entries(pairs ...any) []Entry {
	var out []Entry
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, Entry{RequestID: pairs[i].(string), Amount: int64(pairs[i+1].(int))})
	}
	return out
}

func mustAppend(t *testing.T, s *Section, id string, amt int64) uint64 {
	t.Helper()
	seq, err := s.Append(Entry{RequestID: id, Amount: amt})
	if err != nil {
		t.Fatalf("Append(%q, %d): %v", id, amt, err)
	}
	return seq
}

// The overflow rule of the original design: with history_length 3, after six credits
// of 10 a section that was compacted before each append (as a write does)
// still holds four entries; compacting again (as a find does) folds the
// oldest of them.
func TestSectionOverflowRule(t *testing.T) {
	t.Parallel()
	var s Section
	for i, id := range []string{"req1", "req2", "req3", "req4", "req5", "req6"} {
		s.Compact(3)
		if seq := mustAppend(t, &s, id, 10); seq != uint64(i+1) {
			t.Fatalf("entry %s got number %d, want %d", id, seq, i+1)
		}
	}
	want := Section{Total: 20, Folded: 2, History: entries("req3", 10, "req4", 10, "req5", 10, "req6", 10)}
	if !s.equal(&want) {
		t.Fatalf("after six writes: %+v, want %+v", s, want)
	}
	if !s.Compact(3) {
		t.Fatal("Compact(3) of four entries reported no change")
	}
	want = Section{Total: 30, Folded: 3, History: entries("req4", 10, "req5", 10, "req6", 10)}
	if !s.equal(&want) {
		t.Fatalf("after compaction: %+v, want %+v", s, want)
	}
	if s.Compact(3) {
		t.Fatal("a second Compact(3) reported a change")
	}
	if sum, _ := s.Sum(); sum != 60 {
		t.Fatalf("sum %d, want 60", sum)
	}
}

func TestAppendRefusesBadEntries(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		base Section
		e    Entry
		want error
	}{
		{"zero amount", Section{}, Entry{"r", 0}, ErrInvalidEntry},
		{"negative amount", Section{}, Entry{"r", -1}, ErrInvalidEntry},
		{"empty id", Section{}, Entry{"", 1}, ErrInvalidEntry},
		{"long id", Section{}, Entry{strings.Repeat("x", MaxRequestIDLen+1), 1}, ErrInvalidEntry},
		{"non-UTF-8 id", Section{}, Entry{"\xff", 1}, ErrInvalidEntry},
		{"overflow via total", Section{Total: math.MaxInt64, Folded: 1}, Entry{"r", 1}, ErrOverflow},
		{"overflow via history", Section{History: entries("a", math.MaxInt64-1)}, Entry{"r", 2}, ErrOverflow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := tc.base.clone()
			if _, err := s.Append(tc.e); !errors.Is(err, tc.want) {
				t.Fatalf("Append: got %v, want %v", err, tc.want)
			}
			if !s.equal(&tc.base) {
				t.Fatalf("a refused append changed the section to %+v", s)
			}
		})
	}
	// Exactly up to the limit is fine.
	s := Section{History: entries("a", math.MaxInt64-1)}
	mustAppend(t, &s, "b", 1)
	if sum, ok := s.Sum(); !ok || sum != math.MaxInt64 {
		t.Fatalf("sum %d (ok %v), want MaxInt64", sum, ok)
	}
}

func TestStateValueLookupAndIDs(t *testing.T) {
	t.Parallel()
	s := NewState()
	s.Set("b", &Actor{P: Section{Total: 50, Folded: 1, History: entries("r2", 10)}, N: Section{History: entries("r3", 7)}})
	s.Set("a", &Actor{P: Section{History: entries("r1", 100)}})
	if v, err := s.Value(); err != nil || v != 153 {
		t.Fatalf("Value = %d, %v; want 153", v, err)
	}
	p, n, _ := s.Totals()
	if p != 160 || n != 7 {
		t.Fatalf("Totals = %d, %d; want 160, 7", p, n)
	}
	f, ok := s.Lookup("r3")
	if !ok || f != (Found{Actor: "b", Negative: true, Seq: 1, Amount: -7}) {
		t.Fatalf("Lookup(r3) = %+v, %v", f, ok)
	}
	f, ok = s.Lookup("r2")
	if !ok || f != (Found{Actor: "b", Seq: 2, Amount: 10}) {
		t.Fatalf("Lookup(r2) = %+v, %v", f, ok)
	}
	if s.Has("r0") || !s.Has("r1") {
		t.Fatal("Has disagrees with the histories")
	}
	if got := s.RequestIDs(); !slices.Equal(got, []string{"r1", "r2", "r3"}) {
		t.Fatalf("RequestIDs = %v", got)
	}
	if got := s.Actors(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Actors = %v", got)
	}
}

// Two actors that each checked the limit against what they read can push
// the sum over actors past int64; a reader reports that instead of a
// wrapped-around value.
func TestTotalsOverflowAcrossActors(t *testing.T) {
	t.Parallel()
	s := NewState()
	s.Set("a", &Actor{P: Section{History: entries("x", math.MaxInt64-5)}})
	s.Set("b", &Actor{P: Section{History: entries("y", 10)}})
	if _, err := s.Value(); !errors.Is(err, ErrOverflow) {
		t.Fatalf("Value: got %v, want ErrOverflow", err)
	}
	// The extremes that do fit: all credit, all debit.
	for _, neg := range []bool{false, true} {
		s := NewState()
		a := &Actor{}
		a.Section(neg).History = entries("x", math.MaxInt64)
		s.Set("a", a)
		v, err := s.Value()
		want := int64(math.MaxInt64)
		if neg {
			want = -want
		}
		if err != nil || v != want {
			t.Fatalf("Value = %d, %v; want %d", v, err, want)
		}
	}
}

func TestCloneIsDeep(t *testing.T) {
	t.Parallel()
	s := NewState()
	s.Set("a", &Actor{P: Section{History: entries("x", 1)}})
	c := s.Clone()
	mustAppend(t, &c.Actor("a").P, "y", 2)
	if len(s.Actor("a").P.History) != 1 {
		t.Fatal("appending to a clone changed the original")
	}
}
