package ledger

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// The design's first example: history_length 3, six credits of 10. The last
// write leaves req3…req6 in the actor's row (the overflow rule runs on the
// next merge), so req3 is still known; a find merges and writes back,
// after which only req4…req6 are.
func TestSeedHistoryLength3(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		e := h.engine()
		tg := h.target("player_2", Options{HistoryLength: 3})
		for i := 1; i <= 6; i++ {
			if r := mustUpdate(t, e, tg, 10, fmt.Sprint("req", i)); !r.Applied {
				t.Fatalf("credit req%d not applied", i)
			}
		}
		wantValue(t, e, tg, 60)
		wantKnown(t, mustRead(t, e, tg), map[string]bool{"req1": false, "req2": false, "req3": true, "req4": true, "req5": true, "req6": true})

		st, err := e.Find(ctxT(t), tg)
		if err != nil {
			t.Fatalf("Find: %v", err)
		}
		if v, _ := st.Value(); v != 60 {
			t.Fatalf("Find value = %d, want 60", v)
		}
		wantKnown(t, st, map[string]bool{"req3": false, "req4": true, "req5": true, "req6": true})
		// The find wrote the merged row back: a fresh read agrees.
		wantKnown(t, mustRead(t, e, tg), map[string]bool{"req3": false, "req4": true, "req5": true, "req6": true})
		wantValue(t, e, tg, 60)
	})
}

// The design's approach 2b walk-through, history_length 5: two actors, a
// retry of req1 through the second actor is recognised, and the ledger
// ends at 330. Actor 1's row after its "reads and merges" step (a find)
// is exactly the design's: total 50, requests req2, req3, req5, req6, req7.
//
// One difference from the design's drawing: it shows req1 already
// folded right after actor 1 writes req7. Here, as in the design's
// history_length-3 example, the fold happens on the next merge — the find
// — so until then req1 is still recognised as a retry.
func TestSeedApproach2bTwoActors(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		a1, a2 := h.engine(), h.engine()
		tg := h.target("account", Options{HistoryLength: 5})

		mustUpdate(t, a1, tg, 50, "req1")
		mustUpdate(t, a1, tg, 10, "req2")
		mustUpdate(t, a1, tg, 100, "req3")
		// Actor 2 is asked to write req1 again: it sees it and ignores it.
		if r := mustUpdate(t, a2, tg, 50, "req1"); r.Applied {
			t.Fatal("actor 2 applied req1, which actor 1 had applied")
		}
		wantValue(t, a2, tg, 160)
		mustUpdate(t, a2, tg, 100, "req4")
		mustUpdate(t, a1, tg, 20, "req5")
		mustUpdate(t, a1, tg, 20, "req6")
		mustUpdate(t, a1, tg, 30, "req7")
		wantValue(t, a1, tg, 330)
		wantKnown(t, mustRead(t, a1, tg), map[string]bool{"req1": true})

		st, err := a1.Find(ctxT(t), tg)
		if err != nil {
			t.Fatalf("Find: %v", err)
		}
		if v, _ := st.Value(); v != 330 {
			t.Fatalf("value after actor 1 merges = %d, want 330", v)
		}
		st = mustRead(t, a1, tg)
		if st.Len() != 2 {
			t.Fatalf("%d actors, want 2: %v", st.Len(), st.Actors())
		}
		actor1 := st.Actor(a1Actor(t, a1, tg))
		want1 := Section{Total: 50, Folded: 1, History: entries("req2", 10, "req3", 100, "req5", 20, "req6", 20, "req7", 30)}
		if !actor1.P.equal(&want1) {
			t.Fatalf("actor 1 = %+v, want %+v", actor1.P, want1)
		}
		actor2 := st.Actor(a1Actor(t, a2, tg))
		want2 := Section{History: entries("req4", 100)}
		if !actor2.P.equal(&want2) {
			t.Fatalf("actor 2 = %+v, want %+v", actor2.P, want2)
		}
		wantKnown(t, st, map[string]bool{"req1": false, "req2": true, "req4": true, "req7": true})
	})
}

// a1Actor returns the actor id an engine uses for a ledger.
func a1Actor(t *testing.T, e *Engine, tg Target) string {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	el, ok := e.slots[slotKey{tg.Namespace, tg.Ledger}]
	if !ok {
		t.Fatalf("engine has no actor for %s/%s", tg.Namespace, tg.Ledger)
	}
	return el.Value.(*slot).actor
}

func TestCreditsDebitsAndRetries(t *testing.T) {
	t.Parallel()
	onEachDriver(t, func(t *testing.T, d driver.Driver) {
		for _, strict := range []bool{false, true} {
			h := newHarness(t, d)
			a, b := h.engine(), h.engine()
			tg := h.target("wallet", Options{Mode: modeOf(strict)})
			mustUpdate(t, a, tg, 100, "c1")
			mustUpdate(t, a, tg, -30, "d1")
			mustUpdate(t, b, tg, -5, "d2")
			// Retries from either actor, of credits and debits, change nothing.
			for _, e := range []*Engine{a, b} {
				for _, r := range []struct {
					amt int64
					id  string
				}{{100, "c1"}, {-30, "d1"}, {-5, "d2"}} {
					if res := mustUpdate(t, e, tg, r.amt, r.id); res.Applied {
						t.Fatalf("strict=%v: retry of %s applied again", strict, r.id)
					}
				}
			}
			st := mustRead(t, a, tg)
			p, n, _ := st.Totals()
			if p != 100 || n != 35 {
				t.Fatalf("strict=%v: totals %d/%d, want 100/35", strict, p, n)
			}
			// The same id for a different amount is a caller's mistake.
			for _, amt := range []int64{99, -100} {
				if _, err := b.Update(ctxT(t), tg, amt, "c1"); !errors.Is(err, ErrRequestConflict) {
					t.Fatalf("strict=%v: reusing c1 for %d: got %v, want ErrRequestConflict", strict, amt, err)
				}
			}
			wantValue(t, a, tg, 65)
		}
	})
}

// Amounts that would take a side's total past int64 are refused and
// nothing is written; so are zero amounts and bad request ids.
func TestBadRequestsWriteNothing(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		a, b := h.engine(), h.engine()
		tg := h.target("big", Options{})
		mustUpdate(t, a, tg, math.MaxInt64-10, "p")
		mustUpdate(t, a, tg, -(math.MaxInt64 - 10), "n")
		for _, c := range []struct {
			amt  int64
			id   string
			want error
		}{
			{11, "p2", ErrOverflow},
			{-11, "n2", ErrOverflow},
			{math.MinInt64, "n3", ErrOverflow},
			{0, "z", ErrInvalidEntry},
			{1, "", ErrInvalidEntry},
			{1, "\xff", ErrInvalidEntry},
		} {
			for _, e := range []*Engine{a, b} {
				if _, err := e.Update(ctxT(t), tg, c.amt, c.id); !errors.Is(err, c.want) {
					t.Fatalf("Update(%d, %q): got %v, want %v", c.amt, c.id, err, c.want)
				}
			}
		}
		// The limit itself is fine, on both sides.
		mustUpdate(t, b, tg, 10, "p3")
		mustUpdate(t, b, tg, -10, "n4")
		st := mustRead(t, a, tg)
		if p, n, err := st.Totals(); err != nil || p != math.MaxInt64 || n != math.MaxInt64 {
			t.Fatalf("totals %d/%d, %v; want MaxInt64 both", p, n, err)
		}
		if st.Has("p2") || st.Has("z") {
			t.Fatal("a refused request was recorded")
		}
	})
}

// One process receiving the same request twice at once (a client that
// retried while the first attempt was still running) applies it once: its
// actor's writes are serialised.
func TestSameRequestTwiceAtOnceOnOneProcess(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		e := h.engine()
		tg := h.target("twice", Options{})
		var wg sync.WaitGroup
		applied := make([]bool, 8)
		for i := range applied {
			wg.Go(func() { applied[i] = mustUpdate(t, e, tg, 7, "same").Applied })
		}
		wg.Wait()
		if n := len(slices.DeleteFunc(applied, func(b bool) bool { return !b })); n != 1 {
			t.Fatalf("%d of 8 concurrent submissions applied, want 1", n)
		}
		wantValue(t, e, tg, 7)
	})
}

// An engine that drops a ledger's actor from memory (the LRU bound) starts
// a new actor for it next time; nothing is lost or doubled and retries
// are still recognised across the old and new actors.
func TestEvictedActorsAreReplaced(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		e := h.engine(func(c *Config) { c.MaxActors = 1 })
		l1, l2 := h.target("one", Options{}), h.target("two", Options{})
		for i := range 3 {
			mustUpdate(t, e, l1, 1, fmt.Sprint("a", i))
			mustUpdate(t, e, l2, 2, fmt.Sprint("b", i))
			// The bound holds once the slots go idle. A caller faster than
			// the servers going idle would otherwise move the old slot to
			// the front with its next request, which keeps it, rightly.
			waitWithinBound(t, e)
		}
		for i := range 3 {
			if mustUpdate(t, e, l1, 1, fmt.Sprint("a", i)).Applied {
				t.Fatalf("retry a%d applied again by a later actor", i)
			}
		}
		wantValue(t, e, l1, 3)
		wantValue(t, e, l2, 6)
		if n := mustRead(t, e, l1).Len(); n < 2 {
			t.Fatalf("ledger one has %d actors; eviction should have replaced its actor", n)
		}
	})
}

// waitWithinBound waits until the engine holds no more slots than its
// MaxActors, which it must reach once every slot is idle.
func waitWithinBound(t *testing.T, e *Engine) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.mu.Lock()
		n := e.lru.Len()
		e.mu.Unlock()
		if n <= e.cfg.MaxActors {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d slots kept 10 s after the last request, bound %d", n, e.cfg.MaxActors)
		}
		time.Sleep(time.Millisecond)
	}
}

// Two processes configured with the same actor id write one row from two
// places. The model cannot work like that, and the engine says so instead
// of silently overwriting the other's entries.
func TestSharedActorIDIsDetected(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		same := func(c *Config) { c.ActorID = "not-unique" }
		a, b := h.engine(same), h.engine(same)
		tg := h.target("shared", Options{})
		mustUpdate(t, a, tg, 1, "x")
		if _, err := b.Update(ctxT(t), tg, 1, "y"); !errors.Is(err, ErrActorConflict) {
			t.Fatalf("second process under the same actor id: got %v, want ErrActorConflict", err)
		}
		wantValue(t, a, tg, 1)
		// The second process stops writing that row; its next actor id
		// (the counter moved on) is its own.
		if r := mustUpdate(t, b, tg, 1, "y"); !r.Applied {
			t.Fatal("the retry under a new actor id was not applied")
		}
		wantValue(t, a, tg, 2)
	})
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	ok := Options{}.WithDefaults()
	if ok.HistoryLength != 10 || ok.RetryCount != 10 || ok.ClaimTTL != DefaultClaimTTL || ok.Mode != ModeExact {
		t.Fatalf("defaults = %+v", ok)
	}
	for _, o := range []Options{
		{HistoryLength: -1}, {HistoryLength: MaxHistoryLength + 1}, {RetryCount: MaxRetryCount + 1},
		{ClaimTTL: 500e6}, {ClaimTTL: 1500e6}, {ClaimTTL: driver.MaxClaimTTL + 1e9},
	} {
		if err := o.WithDefaults().Validate(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if err := (Options{RetryCount: -1}).WithDefaults().Validate(); err != nil {
		t.Errorf("no resubmission refused: %v", err)
	}
}
