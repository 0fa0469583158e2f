package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
)

// Folding at a scale tests can step through on the manual clock: actors
// retire at an hour, and the fold age is 1h + max(ClaimTTL 1h,
// 11 × (15s + 1s)) + the default late-write window, 3h10m (the engines'
// own minute is shorter, and the fold allows for writers that run the
// default) + 10m of skew = 5h20m.
const (
	testMaxAge  = time.Hour
	testFoldAge = 5*time.Hour + 20*time.Minute
)

func foldOptions() Options {
	return Options{ActorMaxAge: testMaxAge, ClaimTTL: time.Hour}
}

// dayOfHistory is foldOptions with entries kept a day, so folded rows
// become deletable a day after their last write.
func dayOfHistory() Options {
	o := foldOptions()
	o.EntryRetention = 24 * time.Hour
	return o
}

func foldConfig(c *Config) { c.LateWriteWindow = time.Minute }

// born is the birth an actor id carries.
func born(t *testing.T, actor string) string {
	t.Helper()
	if !dated(actor) {
		t.Fatalf("actor %q has no birth prefix", actor)
	}
	return actor[:datedLen]
}

// retiredWriters has n processes credit 10 each to a new ledger, then
// moves the clock past the fold age: n actors a fold may pass.
func retiredWriters(t *testing.T, h *harness, ledger string, n int) Target {
	t.Helper()
	tg := h.target(ledger, foldOptions())
	retire(t, h, tg, n)
	return tg
}

// retire is retiredWriters on a given ledger.
func retire(t *testing.T, h *harness, tg Target, n int) {
	t.Helper()
	for i := range n {
		mustUpdate(t, h.engine(foldConfig), tg, 10, fmt.Sprintf("old-%d", i))
	}
	h.clk.Advance(testFoldAge + time.Hour)
}

func mustFold(t *testing.T, e *Engine, tg Target) Base {
	t.Helper()
	b, err := e.Fold(ctxT(t), tg)
	if err != nil {
		t.Fatalf("Fold: %v", err)
	}
	return b
}

func storedBase(t *testing.T, h *harness, tg Target) (Base, bool) {
	t.Helper()
	rows, err := h.store.ReadLedger(ctxT(t), &driver.ReadLedgerParams{Namespace: tg.Namespace, Ledger: tg.Ledger})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Actor == driver.LedgerBaseActor {
			b, err := DecodeBase(r.State)
			if err != nil {
				t.Fatal(err)
			}
			return b, true
		}
	}
	return Base{}, false
}

func TestFoldAgeAtTheTestScale(t *testing.T) {
	t.Parallel()
	e, err := New(Config{Store: nopLedgers{}, LateWriteWindow: time.Minute, WriteTimeout: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.foldAge(foldOptions().WithDefaults()); got != testFoldAge {
		t.Fatalf("fold age %v, want %v", got, testFoldAge)
	}
}

// nopLedgers satisfies the engine's Config for tests of pure logic.
type nopLedgers struct{ driver.Ledgers }

func TestActorIDsAreDated(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]bool{
		"0069a1b2c3.host-1": true,
		"0069a1b2c3.":       false,
		"0069A1B2C3.host-1": false,
		"0069a1b2c.host-1":  false,
		"host-1":            false,
		"":                  false,
	} {
		if dated(id) != want {
			t.Errorf("dated(%q) = %v, want %v", id, !want, want)
		}
	}
	for _, at := range []time.Time{time.Unix(0, 0), t0, time.Unix(1<<40-1, 0)} {
		if got, want := datePrefix(at), fmt.Sprintf("%010x", at.Unix()); got != want {
			t.Errorf("datePrefix(%v) = %q, want %q", at, got, want)
		}
		// A cut made of the prefix, or of an actor id (a floored ledger's
		// cut), stands for the same birth second.
		for _, cut := range []string{datePrefix(at), datePrefix(at) + ".host-1-3"} {
			if got, ok := CutTime(cut); !ok || !got.Equal(at) {
				t.Errorf("CutTime(%q) = %v, %v; want %v", cut, got, ok, at)
			}
		}
	}
	for _, cut := range []string{"", "0069a1b2c", "0069A1B2C3", "host-1-1234"} {
		if got, ok := CutTime(cut); ok {
			t.Errorf("CutTime(%q) = %v, want no time", cut, got)
		}
	}
	// Fixed width: a later birth sorts after an earlier one as text.
	if a, b := datePrefix(t0), datePrefix(t0.Add(time.Second)); len(a) != datedLen || a >= b {
		t.Fatalf("datePrefix(t0) = %q, a second later %q", a, b)
	}
}

// An actor takes batches until a minute before its maximum age; the next
// batch gets a fresh actor, dated with its own birth.
func TestActorsRetireByAge(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		tg := h.target("age", foldOptions())
		e := h.engine(foldConfig)
		first := mustUpdate(t, e, tg, 5, "a").Actor
		if born(t, first) != datePrefix(t0) {
			t.Fatalf("actor %q is not dated with its birth %s", first, datePrefix(t0))
		}
		h.clk.Advance(testMaxAge - 2*time.Minute)
		if got := mustUpdate(t, e, tg, 1, "b").Actor; got != first {
			t.Fatalf("an actor younger than its age less a minute was replaced: %q, then %q", first, got)
		}
		h.clk.Advance(90 * time.Second)
		next := mustUpdate(t, e, tg, 2, "c").Actor
		if next == first || born(t, next) != datePrefix(h.clk.Now()) {
			t.Fatalf("an actor within a minute of its age took a batch: %q, then %q", first, next)
		}
		wantValue(t, e, tg, 8)
	})
}

// ageWatch records every row write sent by an actor past its maximum
// age, by the birth its id carries, and can make the next read slow by
// moving the clock on while it runs.
type ageWatch struct {
	driver.Ledgers
	clk  *clock.Manual
	mu   sync.Mutex
	late []string
	slow time.Duration // added to the clock by the next ReadLedger
}

func (w *ageWatch) check(actor string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	secs, err := strconv.ParseInt(actor[:datedLen], 16, 64)
	if err != nil || !w.clk.Now().Before(time.Unix(secs, 0).Add(testMaxAge)) {
		w.late = append(w.late, actor)
	}
}

func (w *ageWatch) WriteLedgerRow(ctx context.Context, p *driver.WriteLedgerRowParams) error {
	w.check(p.Row.Actor)
	return w.Ledgers.WriteLedgerRow(ctx, p)
}

func (w *ageWatch) WriteLedgerRows(ctx context.Context, ws []driver.WriteLedgerRowParams) error {
	for i := range ws {
		w.check(ws[i].Row.Actor)
	}
	return w.Ledgers.WriteLedgerRows(ctx, ws)
}

func (w *ageWatch) ReadLedger(ctx context.Context, p *driver.ReadLedgerParams) ([]driver.LedgerRow, error) {
	w.mu.Lock()
	d := w.slow
	w.slow = 0
	w.mu.Unlock()
	w.clk.Advance(d)
	return w.Ledgers.ReadLedger(ctx, p)
}

func (w *ageWatch) slowNextRead(d time.Duration) {
	w.mu.Lock()
	w.slow = d
	w.mu.Unlock()
}

func watchAges(h *harness) *ageWatch {
	w := &ageWatch{Ledgers: h.store, clk: h.clk}
	h.store = w
	return w
}

// A batch that started young but reaches its write after the actor's
// maximum age sends nothing: it answers not applied, its claim is given
// back, and the retry is applied once, by a new actor.
func TestNoWriteIsSentPastTheActorsAge(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		w := watchAges(h)
		tg := h.target("late", foldOptions())
		e := h.engine(foldConfig)
		first := mustUpdate(t, e, tg, 5, "a").Actor
		h.clk.Advance(testMaxAge - 2*time.Minute)
		e.afterRead = func(Target, string) { h.clk.Advance(3 * time.Minute) } // a slow read
		_, err := e.Update(ctxT(t), tg, 7, "b")
		if !errors.Is(err, ErrNotApplied) || !errors.Is(err, errActorAged) {
			t.Fatalf("a write due past the actor's age: %v, want ErrNotApplied for its age", err)
		}
		e.afterRead = nil
		if got := mustUpdate(t, e, tg, 7, "b"); !got.Applied || got.Actor == first {
			t.Fatalf("retry: %+v, want applied by a new actor", got)
		}
		wantValue(t, e, tg, 12)
		if len(w.late) > 0 {
			t.Fatalf("writes sent by actors past their age: %v", w.late)
		}
	})
}

// Transfers and finds take no actor in its last minute either: past the
// age they go to new actors; a transfer whose read outlasts the age sends
// nothing and answers not applied.
func TestAgedTransfersAndFindsUseNewActors(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		w := watchAges(h)
		o := foldOptions()
		o.HistoryLength = 1
		a, b := h.target("ta", o), h.target("tb", o)
		e := h.engine(foldConfig)
		first := mustUpdate(t, e, a, 50, "c1").Actor
		mustUpdate(t, e, b, 1, "c2")
		h.clk.Advance(testMaxAge - 30*time.Second)
		res, err := e.Transfer(ctxT(t), a, b, 10, "t1")
		if err != nil || !res.Applied || res.Actor == first {
			t.Fatalf("a transfer in the actor's last minute: %+v, %v; want applied by a new actor", res, err)
		}
		h.clk.Advance(testMaxAge - 2*time.Minute)
		w.slowNextRead(3 * time.Minute)
		if _, err := e.Transfer(ctxT(t), a, b, 10, "t2"); !errors.Is(err, ErrNotApplied) || !errors.Is(err, errActorAged) {
			t.Fatalf("a transfer whose write comes past the age: %v, want not applied for its age", err)
		}
		if res, err := e.Transfer(ctxT(t), a, b, 10, "t2"); err != nil || !res.Applied {
			t.Fatalf("its retry: %+v, %v", res, err)
		}
		// Two credits leave the actor's history longer than its length
		// (1), so a find by it would write its row back, compacted.
		mustUpdate(t, e, a, 1, "c3")
		mustUpdate(t, e, a, 1, "c4")
		h.clk.Advance(testMaxAge + time.Minute) // the actors are past their age: a find takes new ones
		st, err := e.Find(ctxT(t), a)
		if err != nil {
			t.Fatalf("Find with an aged actor: %v", err)
		}
		if v, _ := st.Value(); v != 32 {
			t.Fatalf("find reads %d, want 32", v)
		}
		wantValue(t, e, b, 21)
		if len(w.late) > 0 {
			t.Fatalf("writes sent by actors past their age: %v", w.late)
		}
	})
}

// baseHider answers reads from a cut as a replica that missed the last
// fold would: without the base row.
type baseHider struct{ driver.Ledgers }

func (h baseHider) ReadLedger(ctx context.Context, p *driver.ReadLedgerParams) ([]driver.LedgerRow, error) {
	rows, err := h.Ledgers.ReadLedger(ctx, p)
	if p.From == "" {
		return rows, err
	}
	var out []driver.LedgerRow
	for _, r := range rows {
		if r.Actor != driver.LedgerBaseActor {
			out = append(out, r)
		}
	}
	return out, err
}

// A reader that remembers a cut, answered by a replica that lacks the
// base, reads again from the first row rather than count the rows
// between the cuts as lost; so does a fold, which also reads from its
// cut.
func TestAReadWithoutTheBaseReadsEveryRow(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		tg := retiredWriters(t, h, "stale", 3)
		w := h.engine(foldConfig)
		mustUpdate(t, w, tg, 5, "mid")
		reader := h.engine(func(c *Config) { foldConfig(c); c.Store = baseHider{h.store} })
		if b := mustFold(t, reader, tg); b.Version != 1 || b.P != 30 {
			t.Fatalf("first fold %v, want v1 +30", b)
		}
		wantValue(t, reader, tg, 35) // the fold's cut is remembered; the base is hidden from reads from it
		h.clk.Advance(testFoldAge + time.Hour)
		mustUpdate(t, h.engine(foldConfig), tg, 1, "new")
		if b := mustFold(t, reader, tg); b.Version != 2 || b.P != 35 {
			t.Fatalf("second fold %v, want v2 +35", b)
		}
		wantValue(t, reader, tg, 36)
	})
}

// Three processes write, restart (new actors), and the fold age passes:
// a fold moves the cut past the retired actors, and every reader —
// one that remembers no cut, one that remembers the old one, the folder —
// reads the same value, merging only the live actors. A second fold with
// nothing new to pass changes nothing.
func TestFoldCountsEachActorOnce(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		tg := h.target("fold", foldOptions())
		writers := []*Engine{h.engine(foldConfig), h.engine(foldConfig), h.engine(foldConfig)}
		for i, e := range writers {
			mustUpdate(t, e, tg, int64(100*(i+1)), fmt.Sprintf("credit-%d", i))
			mustUpdate(t, e, tg, -int64(i+1), fmt.Sprintf("debit-%d", i))
		}
		stale := h.engine(foldConfig)
		wantValue(t, stale, tg, 600-6) // remembers no cut yet
		h.clk.Advance(testFoldAge + time.Hour)
		live := mustUpdate(t, writers[0], tg, 1000, "later").Actor // a fresh actor: the first is too old
		const want = 600 - 6 + 1000

		folder := h.engine(foldConfig)
		b := mustFold(t, folder, tg)
		if b.Version != 1 || b.P != 600 || b.N != 6 || b.Cut != datePrefix(h.clk.Now().Add(-testFoldAge)) {
			t.Fatalf("first fold stored %v, want v1 cut %s +600 -6", b, datePrefix(h.clk.Now().Add(-testFoldAge)))
		}
		for name, e := range map[string]*Engine{"folder": folder, "fresh": h.engine(foldConfig), "stale": stale, "writer": writers[0]} {
			st := mustRead(t, e, tg)
			if v, err := st.Value(); err != nil || v != want {
				t.Fatalf("%s reads %d, %v after the fold; want %d", name, v, err, want)
			}
			if got := st.Actors(); len(got) != 1 || got[0] != live {
				t.Fatalf("%s merged actors %v, want only the live one %s", name, got, live)
			}
		}
		if again := mustFold(t, folder, tg); again != b {
			t.Fatalf("a fold with nothing to pass stored %v, want %v unchanged", again, b)
		}
		// A write below the cut breaks the fold's assumptions (a clock
		// far off, a write landing after the late-write window): it is
		// ignored, never counted on top of the base.
		late := &Actor{}
		if _, err := late.P.Append(Entry{RequestID: "late", Amount: 50}); err != nil {
			t.Fatal(err)
		}
		err := h.store.WriteLedgerRow(ctxT(t), &driver.WriteLedgerRowParams{Namespace: tg.Namespace, Ledger: tg.Ledger,
			Row: driver.LedgerRow{Actor: datePrefix(t0) + ".ghost-1", State: EncodeActor(late)}, Timestamp: driver.Micros(h.clk.Now())})
		if err != nil {
			t.Fatal(err)
		}
		wantValue(t, h.engine(foldConfig), tg, want)
		wantValue(t, folder, tg, want)
		// Later folds add to the base; the value never moves.
		h.clk.Advance(testFoldAge + time.Hour)
		mustUpdate(t, writers[1], tg, 1, "last")
		if b2 := mustFold(t, folder, tg); b2.Version != 2 || b2.P != 1600 || b2.N != 6 {
			t.Fatalf("second fold stored %v, want v2 +1600 -6", b2)
		}
		wantValue(t, stale, tg, want+1)
		wantValue(t, h.engine(foldConfig), tg, want+1)
	})
}

// storedActors lists the actor rows the store holds, the folded ones too.
func storedActors(t *testing.T, h *harness, tg Target) []string {
	t.Helper()
	rows, err := h.store.ReadLedger(ctxT(t), &driver.ReadLedgerParams{Namespace: tg.Namespace, Ledger: tg.Ledger})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rows {
		if r.Actor != driver.LedgerBaseActor {
			ids = append(ids, r.Actor)
		}
	}
	return ids
}

// A fold deletes the rows it passed once nothing reads them: at once in a
// namespace without history, and once their entries expired in one with
// it, so the bytes a ledger holds stop growing with its age.
func TestFoldDeletesRowsNothingReads(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		o := dayOfHistory()
		tg := h.target("prune", o)
		retire(t, h, tg, 3)
		live := mustUpdate(t, h.engine(foldConfig), tg, 5, "mid").Actor
		e := h.engine(foldConfig)
		if b := mustFold(t, e, tg); b.Version != 1 || b.P != 30 {
			t.Fatalf("fold %v, want v1 +30", b)
		}
		if got := storedActors(t, h, tg); len(got) != 4 {
			t.Fatalf("rows after the first fold: %v, want all 4 kept while their entries live", got)
		}
		page, err := e.Entries(ctxT(t), tg, "", 10)
		if err != nil || len(page.Entries) != 4 {
			t.Fatalf("history after the fold: %+v, %v; want 4 entries", page, err)
		}
		h.clk.Advance(24 * time.Hour)
		if b := mustFold(t, e, tg); b.Version != 2 || b.P != 35 {
			t.Fatalf("second fold %v, want v2 +35", b)
		}
		if got := storedActors(t, h, tg); len(got) != 1 || got[0] != live {
			t.Fatalf("rows after the entries expired: %v, want only %s, whose entry lives on", got, live)
		}
		wantValue(t, h.engine(foldConfig), tg, 35)

		o.EntryRetention = -1
		none := h.target("prune-nohist", o)
		for i := range 2 {
			mustUpdate(t, h.engine(foldConfig), none, 10, fmt.Sprintf("old-%d", i))
		}
		h.clk.Advance(testFoldAge + time.Hour)
		if b := mustFold(t, e, none); b.P != 20 {
			t.Fatalf("fold without history %v, want +20", b)
		}
		if got := storedActors(t, h, none); len(got) != 0 {
			t.Fatalf("rows of a namespace without history after a fold: %v, want none", got)
		}
		wantValue(t, h.engine(foldConfig), none, 20)
	})
}

// Folds racing each other: one compare-and-set wins, the others start
// over and find nothing left to pass, and the value is what it was.
func TestRacingFoldsStoreOneBase(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		tg := h.target("race", foldOptions())
		for i := range 4 {
			mustUpdate(t, h.engine(foldConfig), tg, int64(i+1), fmt.Sprintf("r-%d", i))
		}
		h.clk.Advance(testFoldAge + time.Minute)
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			e := h.engine(foldConfig)
			wg.Go(func() { _, errs[i] = e.Fold(ctxT(t), tg) })
		}
		wg.Wait()
		// A fold that loses starts over from the winner's base, which
		// leaves it nothing to pass.
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("racing folds failed: %v", err)
		}
		b, ok := storedBase(t, h, tg)
		if !ok || b.Version != 1 || b.P != 10 {
			t.Fatalf("stored base %v (found %v), want v1 +10", b, ok)
		}
		wantValue(t, h.engine(foldConfig), tg, 10)
	})
}

// The history lists a folded actor's entries: it reads every row, from
// the first, and checks each entry against its actor's row.
func TestHistoryKeepsFoldedActorsEntries(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		tg := h.target("hist", foldOptions())
		e := h.engine(foldConfig)
		mustUpdate(t, e, tg, 5, "old-1")
		mustUpdate(t, e, tg, -2, "old-2")
		h.clk.Advance(testFoldAge + time.Minute)
		mustUpdate(t, e, tg, 4, "new-1")
		if b := mustFold(t, e, tg); b.Version != 1 || b.P != 5 || b.N != 2 {
			t.Fatalf("fold stored %v, want v1 +5 -2", b)
		}
		page, err := e.Entries(ctxT(t), tg, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, en := range page.Entries {
			ids = append(ids, en.RequestID)
		}
		if strings.Join(ids, ",") != "new-1,old-2,old-1" {
			t.Fatalf("history %v, want new-1, old-2, old-1", ids)
		}
	})
}

// In a floored ledger an actor in the rights record may still be
// reclaimed, which rewrites its row: the cut stops at it, however old.
func TestFoldStopsAtTheLowestRightsHolder(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		o := foldOptions()
		o.Floored, o.EntryRetention = true, -1
		tg := h.target("floored", o)
		keep := func(c *Config) { foldConfig(c); c.RightsIdle = 1000 * time.Hour } // it never gives its rights back
		e1 := h.engine(keep)
		mustUpdate(t, e1, tg, 100, "c1")
		holder := mustUpdate(t, e1, tg, -10, "d1").Actor
		r, err := e1.readRights(ctxT(t), tg, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := r.grants[holder]; !ok {
			t.Fatalf("the debiting actor %s holds no rights: %v", holder, r.grants)
		}
		h.clk.Advance(5 * time.Minute)
		e2 := h.engine(keep)
		mustUpdate(t, e2, tg, 1, "c2") // born after the holder, also below the coming cut
		h.clk.Advance(testFoldAge + time.Hour)
		mustUpdate(t, h.engine(keep), tg, 1, "c3")
		b, err := h.engine(keep).Fold(ctxT(t), tg)
		if err != nil {
			t.Fatal(err)
		}
		if b.Cut > holder {
			t.Fatalf("the fold passed rights holder %s: %v", holder, b)
		}
		if b.P != 0 || b.N != 0 {
			t.Fatalf("the fold counted actors at or above the rights holder: %v", b)
		}
		st := mustRead(t, h.engine(keep), tg)
		if st.Actor(holder) == nil {
			t.Fatalf("the rights holder's row left the reads: %v", st.Actors())
		}
		wantValue(t, h.engine(keep), tg, 92)
	})
}

// A read that finds actors below the cut a fold would make starts the
// fold itself.
func TestReadsStartFolds(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		tg := retiredWriters(t, h, "auto", 3)
		e := h.engine(foldConfig)
		wantValue(t, e, tg, 30)
		deadline := time.Now().Add(30 * time.Second)
		for {
			if b, ok := storedBase(t, h, tg); ok {
				if b.P != 30 {
					t.Fatalf("the read's fold stored %v, want +30", b)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no fold within 30s of a read that found retired actors")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if st := mustRead(t, e, tg); st.Len() != 0 || st.Base().Version != 1 {
			t.Fatalf("after the fold a read merged %d actors over %v, want none over v1", st.Len(), st.Base())
		}
		wantValue(t, e, tg, 30)
	})
}

// Namespaces made before folding, and those that opt out, keep their
// actors for good and never fold.
func TestWithoutActorMaxAgeNothingFolds(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		tg := h.target("never", Options{ActorMaxAge: -1})
		e := h.engine(foldConfig)
		first := mustUpdate(t, e, tg, 1, "a").Actor
		h.clk.Advance(100 * 24 * time.Hour)
		if got := mustUpdate(t, e, tg, 1, "b").Actor; got != first {
			t.Fatalf("an actor of a namespace without an age was replaced: %q, then %q", first, got)
		}
		if _, err := e.Fold(ctxT(t), tg); err == nil {
			t.Fatal("Fold of a namespace without an actor age succeeded")
		}
		if _, ok := storedBase(t, h, tg); ok {
			t.Fatal("a base was stored")
		}
	})
}

func TestActorMaxAgeIsStored(t *testing.T) {
	t.Parallel()
	m := Options{}.Stored()
	if m[storedActorMaxAge] != "86400" {
		t.Fatalf("a new namespace stores actor age %q, want 86400", m[storedActorMaxAge])
	}
	o, err := OptionsFromStored(m)
	if err != nil || o.Effective().ActorMaxAge != DefaultActorMaxAge {
		t.Fatalf("read back: %+v, %v", o, err)
	}
	delete(m, storedActorMaxAge) // a namespace made before folding
	if o, err = OptionsFromStored(m); err != nil || o.Effective().folds() {
		t.Fatalf("a record without the age: %+v, %v; want no folding", o.Effective(), err)
	}
	m = Options{ActorMaxAge: -1}.Stored()
	if o, err = OptionsFromStored(m); err != nil || o.Effective().folds() {
		t.Fatalf("an opted-out namespace: %+v, %v; want no folding", o.Effective(), err)
	}
	for _, bad := range []string{"-1", "x", "999999999999"} {
		m[storedActorMaxAge] = bad
		if _, err := OptionsFromStored(m); err == nil {
			t.Errorf("stored actor age %q accepted", bad)
		}
	}
	for _, bad := range []time.Duration{time.Millisecond, 30 * time.Second, 90500 * time.Millisecond, driver.MaxClaimTTL + time.Second} {
		if err := (Options{ActorMaxAge: bad}).WithDefaults().Validate(); err == nil {
			t.Errorf("actor age %v accepted", bad)
		}
	}
}

func TestBaseRoundTrip(t *testing.T) {
	t.Parallel()
	b := Base{Version: 3, Cut: "0069a1b2c3", P: 12, N: 5}
	got, err := DecodeBase(EncodeBase(b))
	if err != nil || got != b {
		t.Fatalf("round trip of %v: %v, %v", b, got, err)
	}
	for name, raw := range map[string][]byte{
		"empty":       {},
		"format 2":    append([]byte{2}, EncodeBase(b)[1:]...),
		"version 0":   EncodeBase(Base{Cut: "x"}),
		"no cut":      EncodeBase(Base{Version: 1}),
		"trailing":    append(EncodeBase(b), 0),
		"short":       EncodeBase(b)[:4],
		"long cut":    EncodeBase(Base{Version: 1, Cut: strings.Repeat("a", maxCutLen+1)}),
		"P overflows": {baseFormat, 1, 1, 'x', 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0},
	} {
		if _, err := DecodeBase(raw); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: DecodeBase = %v, want ErrCorrupt", name, err)
		}
	}
}

// Reads start a fold of a ledger at most once per foldRetry, and after a
// fold that passed nothing at most once per foldIdleRetry.
func TestReadsPaceTheirFolds(t *testing.T) {
	t.Parallel()
	if foldRetry != 10*time.Second || foldIdleRetry != 10*time.Minute || maxFolding != 4 {
		t.Fatalf("pacing %v, %v, %d folds at once; docs/ledger-folding.md says 10s, 10m and 4", foldRetry, foldIdleRetry, maxFolding)
	}
	var c cutMemory
	k, other := slotKey{"n", "l"}, slotKey{"n", "m"}
	steps := []struct {
		at   time.Duration
		idle bool // the fold started at this step passed nothing
		want bool
	}{
		{0, false, true},
		{foldRetry - time.Second, false, false},
		{foldRetry, true, true},
		{foldRetry + foldIdleRetry - time.Second, false, false},
		{foldRetry + foldIdleRetry, false, true},
	}
	for _, s := range steps {
		now := t0.Add(s.at)
		if got := c.mayTry(k, now); got != s.want {
			t.Fatalf("at +%v: mayTry = %v, want %v", s.at, got, s.want)
		}
		if s.idle {
			c.idle(k, now)
		}
	}
	if !c.mayTry(other, t0) {
		t.Fatal("another ledger's fold was held back")
	}
}

// foldReads records where the reads at ALL (a fold's) start.
type foldReads struct {
	driver.Ledgers
	mu    sync.Mutex
	froms []string
}

func (r *foldReads) ReadLedger(ctx context.Context, p *driver.ReadLedgerParams) ([]driver.LedgerRow, error) {
	if p.Consistency == driver.All {
		r.mu.Lock()
		r.froms = append(r.froms, p.From)
		r.mu.Unlock()
	}
	return r.Ledgers.ReadLedger(ctx, p)
}

// watchedFolder is an engine on store whose folds' reads are recorded.
func watchedFolder(h *harness, store driver.Ledgers) (*Engine, *foldReads) {
	reads := &foldReads{Ledgers: store}
	return h.engine(func(c *Config) { foldConfig(c); c.Store = reads }), reads
}

// wantWholeReadLeavingNone checks that the last fold read every row and
// that no actor row is left.
func (r *foldReads) wantWholeReadLeavingNone(t *testing.T, h *harness, tg Target, when string) {
	t.Helper()
	if got := storedActors(t, h, tg); r.last(t) != "" || len(got) != 0 {
		t.Fatalf("%s the fold read from %q and left %v; want a read of every row, none left", when, r.last(t), got)
	}
}

// last is where the last fold's read started.
func (r *foldReads) last(t *testing.T) string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.froms) == 0 {
		t.Fatal("no read at ALL")
	}
	return r.froms[len(r.froms)-1]
}

// A fold reads from the cut it last saw: the rows that may still write
// and the ones it passes, not every row the history keeps. It reads every
// row the first time in a process and when a folded row may have become
// deletable, and deletes those.
func TestFoldReadsFromItsCutUntilAPruneIsDue(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		tg := h.target("from-cut", dayOfHistory())
		retire(t, h, tg, 3)
		e, reads := watchedFolder(h, h.store)
		b1 := mustFold(t, e, tg)
		if b1.Version != 1 || b1.P != 30 || reads.last(t) != "" {
			t.Fatalf("first fold %v from %q, want v1 +30 from the first row", b1, reads.last(t))
		}
		mustUpdate(t, h.engine(foldConfig), tg, 5, "mid")
		h.clk.Advance(testFoldAge + time.Hour)
		if b2 := mustFold(t, e, tg); b2.Version != 2 || b2.P != 35 || reads.last(t) != b1.Cut {
			t.Fatalf("second fold %v from %q, want v2 +35 from the first cut %q", b2, reads.last(t), b1.Cut)
		}
		if got := storedActors(t, h, tg); len(got) != 4 {
			t.Fatalf("rows %v, want all 4 while their entries live", got)
		}
		// Every entry has expired: the next fold reads every row and
		// deletes the folded ones.
		h.clk.Advance(24 * time.Hour)
		if b3 := mustFold(t, e, tg); b3.Version != 2 || reads.last(t) != "" {
			t.Fatalf("third fold %v from %q, want v2 from the first row", b3, reads.last(t))
		}
		if got := storedActors(t, h, tg); len(got) != 0 {
			t.Fatalf("rows %v after their entries expired, want none", got)
		}
		wantValue(t, h.engine(foldConfig), tg, 35)
	})
}

// A row folded by another process is above this process's cut when it
// last read every row and below the cut it reads from afterwards, so it
// never sees it; it still reads every row again by the time such a row
// may be deletable, and deletes it.
func TestRowsFoldedElsewhereAreDeletedInTime(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		o := dayOfHistory()
		tg := h.target("elsewhere", o)
		mustUpdate(t, h.engine(foldConfig), tg, 10, "r-1")
		e, reads := watchedFolder(h, h.store)
		if b := mustFold(t, e, tg); b.Version != 0 || reads.last(t) != "" {
			t.Fatalf("fold of a live actor %v from %q, want nothing folded, from the first row", b, reads.last(t))
		}
		h.clk.Advance(testFoldAge + time.Hour)
		if b := mustFold(t, h.engine(foldConfig), tg); b.Version != 1 || b.P != 10 {
			t.Fatalf("the other process's fold %v, want v1 +10", b)
		}
		wantValue(t, e, tg, 10) // e now reads from the other fold's cut
		h.clk.Advance(24 * time.Hour)
		mustFold(t, e, tg)
		reads.wantWholeReadLeavingNone(t, h, tg, "a retention after the other fold,")
	})
}

// failDeletes fails DeleteLedgerRows while failing is set.
type failDeletes struct {
	driver.Ledgers
	failing atomic.Bool
}

func (f *failDeletes) DeleteLedgerRows(ctx context.Context, p *driver.DeleteLedgerRowsParams) error {
	if f.failing.Load() {
		return fmt.Errorf("%w: deletes fail in this test", driver.ErrUnavailable)
	}
	return f.Ledgers.DeleteLedgerRows(ctx, p)
}

// Reads of every row are spaced by pruneGap: a delete that failed is
// tried again by the first fold a gap later, not by every fold before it.
func TestAFailedDeleteIsRetriedAGapLater(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		o := dayOfHistory()
		if gap := pruneGap(o.WithDefaults()); gap != 24*time.Hour/10 {
			t.Fatalf("pruneGap %v, want a tenth of the retention", gap)
		}
		tg := h.target("failed-delete", o)
		retire(t, h, tg, 3)
		h.clk.Advance(24 * time.Hour) // folded and deletable at the first fold
		fails := &failDeletes{Ledgers: h.store}
		fails.failing.Store(true)
		e, reads := watchedFolder(h, fails)
		b := mustFold(t, e, tg)
		if got := storedActors(t, h, tg); b.P != 30 || len(got) != 3 {
			t.Fatalf("fold %v left rows %v; want +30 and the 3 rows its failed delete kept", b, got)
		}
		fails.failing.Store(false)
		h.clk.Advance(time.Hour)
		mustFold(t, e, tg)
		if got := storedActors(t, h, tg); reads.last(t) != b.Cut || len(got) != 3 {
			t.Fatalf("a fold within the gap read from %q and left %v; want a read from the cut %q, rows kept", reads.last(t), got, b.Cut)
		}
		h.clk.Advance(2 * time.Hour)
		mustFold(t, e, tg)
		reads.wantWholeReadLeavingNone(t, h, tg, "past the gap,")
		wantValue(t, h.engine(foldConfig), tg, 30)
	})
}

// A row this process folded through a read from the cut is deleted once
// it is deletable, not only when the bound on the next read of every row
// comes.
func TestRowsFoldedFromTheCutAreDeletedWhenDue(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		o := dayOfHistory()
		tg := h.target("due", o)
		mustUpdate(t, h.engine(foldConfig), tg, 10, "y") // folded and deleted by the first fold
		h.clk.Advance(25 * time.Hour)
		mustUpdate(t, h.engine(foldConfig), tg, 5, "x") // deletable at t0 + 49h10m
		h.clk.Advance(3 * time.Hour)
		e, reads := watchedFolder(h, h.store)
		// t0+28h: reads every row, passes and deletes y; x is live. The
		// next read of every row is due at t0+52h10m at the latest.
		if b := mustFold(t, e, tg); b.P != 10 || reads.last(t) != "" || len(storedActors(t, h, tg)) != 1 {
			t.Fatalf("first fold %v from %q, rows %v; want +10 from the first row, x left", b, reads.last(t), storedActors(t, h, tg))
		}
		h.clk.Advance(testFoldAge + time.Hour - 3*time.Hour) // t0 + 31h20m
		if b := mustFold(t, e, tg); b.P != 15 || reads.last(t) == "" {
			t.Fatalf("second fold %v from %q, want +15 from the cut", b, reads.last(t))
		}
		h.clk.Advance(50*time.Hour - 31*time.Hour - 20*time.Minute) // t0 + 50h
		mustFold(t, e, tg)
		reads.wantWholeReadLeavingNone(t, h, tg, "at t0+50h")
		wantValue(t, h.engine(foldConfig), tg, 15)
	})
}
