package ledger

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

func inDC(dc string) func(*Config) { return func(c *Config) { c.DataCenter = dc } }

// wantSharesSettled checks the records once every engine has closed: no
// actor holds rights in any record, each data center's share is what its
// actors used, and spent plus the shares is the ledger's debit total.
func wantSharesSettled(t *testing.T, e *Engine, tg Target) {
	t.Helper()
	rec, n := recordAndDebits(t, e, tg)
	total := rec.spent
	for holder, g := range rec.grants {
		dc, ok := shareHolder(holder)
		if !ok {
			t.Fatalf("actor %s holds %+v in the ledger's record after every engine closed", holder, g)
		}
		local, err := e.readRights(ctxT(t), tg, dc)
		if err != nil {
			t.Fatal(err)
		}
		if len(local.grants) != 0 || local.cap != g.total || local.spent != g.total {
			t.Fatalf("data center %s after every engine closed: record %+v, share %d; want no grants and cap = spent = share", dc, local, g.total)
		}
		total += g.total
	}
	if total != n {
		t.Fatalf("spent %d plus the shares %v is %d; want the debit total %d", rec.spent, rec.grants, total, n)
	}
}

// Processes in two data centers debit one ledger at once, each through
// its data center's share: no read shows the ledger below its floor, the
// records account for every debit once, and what was not used is free
// again once they have closed.
//
// With a short idle time actors go idle between their batches, so returns
// of shares race with raises, in one data center and across both.
func TestShareFloorHoldsUnderConcurrentDebits(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		for _, c := range []struct {
			name string
			idle time.Duration
		}{{"idle-1s", time.Second}, {"idle-1ms", time.Millisecond}} {
			t.Run(c.name, func(t *testing.T) {
				tg := h.target("busy-wallet-dc-"+c.name, floored(0))
				idle := func(cfg *Config) { cfg.RightsIdle = c.idle }
				engines := []*Engine{h.engine(idle, inDC("dc1")), h.engine(idle, inDC("dc1")), h.engine(idle, inDC("dc2")), h.engine(idle, inDC("dc2"))}
				want := debitConcurrently(t, tg, engines)
				final := h.engine(inDC("dc2"))
				wantSharesSettled(t, final, tg)
				if want > 0 {
					mustUpdate(t, final, tg, -want, "all-of-it")
				}
				wantValue(t, final, tg, 0)
			})
		}
	})
}

// cutLedgers is a store whose ledger-wide operations fail, as they do on
// Cassandra while the data centers are cut apart: the ledger's own rights
// record (SERIAL) and reads at a level that needs every data center.
type cutLedgers struct {
	driver.Ledgers
	cut atomic.Bool
}

var errCut = errors.New("the data centers are cut apart (test)")

func (c *cutLedgers) ReadLedgerRights(ctx context.Context, p *driver.ReadLedgerRightsParams) (driver.LedgerRights, error) {
	if c.cut.Load() && p.DataCenter == "" {
		return driver.LedgerRights{}, errors.Join(driver.ErrUnavailable, errCut)
	}
	return c.Ledgers.ReadLedgerRights(ctx, p)
}

func (c *cutLedgers) SwapLedgerRights(ctx context.Context, p *driver.SwapLedgerRightsParams) (bool, driver.LedgerRights, error) {
	if c.cut.Load() && p.DataCenter == "" {
		return false, driver.LedgerRights{}, errors.Join(driver.ErrUnavailable, errCut)
	}
	return c.Ledgers.SwapLedgerRights(ctx, p)
}

func (c *cutLedgers) ReadLedger(ctx context.Context, p *driver.ReadLedgerParams) ([]driver.LedgerRow, error) {
	switch p.Consistency {
	case driver.EachQuorum, driver.Quorum, driver.All:
		if c.cut.Load() {
			return nil, errors.Join(driver.ErrUnavailable, errCut)
		}
	}
	return c.Ledgers.ReadLedger(ctx, p)
}

// While the ledger's own record cannot be reached, a data center debits
// within the share it took before, and refuses beyond it with
// ErrRightsHeld, never below the floor; a data center that took no share
// refuses every debit the same way. After healing, shares are raised again.
func TestShareServesDebitsWhileTheLedgersRecordIsCut(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		store := &cutLedgers{Ledgers: h.store}
		tg := h.target("cut-wallet", floored(0))
		keep := func(c *Config) { c.Store, c.RightsIdle = store, time.Hour } // no return when idle
		dc1, dc2 := h.engine(keep, inDC("dc1")), h.engine(keep, inDC("dc2"))
		mustUpdate(t, dc1, tg, 100, "c1")
		mustUpdate(t, dc1, tg, -10, "a1") // the share: 10 + half of the 90 left
		rec, err := dc1.readRights(ctxT(t), tg, "")
		if err != nil {
			t.Fatal(err)
		}
		share := rec.grants[sharePrefix+"dc1"].total
		if share != 55 {
			t.Fatalf("dc1's share after its first debit: %d (record %+v); want 55", share, rec)
		}

		store.cut.Store(true)
		for i := range 45 {
			mustUpdate(t, dc1, tg, -1, "cut-a"+string(rune('0'+i/10))+string(rune('0'+i%10)))
		}
		if err := updateErr(t, dc1, tg, -1, "cut-a-beyond"); !errors.Is(err, ErrRightsHeld) || !errors.Is(err, ErrNotApplied) {
			t.Fatalf("a debit beyond the share during the cut: %v; want ErrRightsHeld", err)
		}
		if err := updateErr(t, dc2, tg, -1, "cut-b1"); !errors.Is(err, ErrRightsHeld) {
			t.Fatalf("a debit in the data center without a share during the cut: %v; want ErrRightsHeld", err)
		}
		mustUpdate(t, dc2, tg, 5, "cut-c1") // credits need no rights
		wantValue(t, dc1, tg, 50)

		store.cut.Store(false)
		h.clk.Advance(raiseHoldOff) // dc2's last raise failed: the next waits this long
		mustUpdate(t, dc2, tg, -50, "healed-b1")
		wantValue(t, dc1, tg, 0)
		if err := updateErr(t, dc1, tg, -1, "healed-a1"); !errors.Is(err, ErrBelowFloor) && !errors.Is(err, ErrRightsHeld) {
			t.Fatalf("a debit of an empty ledger: %v; want a refusal", err)
		}
		for _, e := range []*Engine{dc1, dc2} {
			if err := e.Close(ctxT(t)); err != nil {
				t.Fatal(err)
			}
		}
		wantSharesSettled(t, h.engine(), tg)
	})
}

// A data center's actors going idle give back the part of its share they
// do not use, so another data center can debit the balance.
func TestShareComesBackWhenIdle(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		tg := h.target("idle-share", floored(0))
		idle := func(c *Config) { c.RightsIdle = 50 * time.Millisecond }
		dc1, dc2 := h.engine(idle, inDC("dc1")), h.engine(idle, inDC("dc2"))
		mustUpdate(t, dc1, tg, 100, "c1")
		mustUpdate(t, dc1, tg, -10, "a1")
		deadline := time.Now().Add(30 * time.Second)
		for {
			rec, err := dc1.readRights(ctxT(t), tg, "")
			if err != nil {
				t.Fatal(err)
			}
			if rec.grants[sharePrefix+"dc1"].total == 10 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("dc1's share is still %+v 30 s after its actor went idle; want 10 (what it used)", rec.grants)
			}
			time.Sleep(20 * time.Millisecond)
		}
		mustUpdate(t, dc2, tg, -90, "b1")
		wantValue(t, dc2, tg, 0)
	})
}

// A raise's second step that arrives after a return finished (it carries
// the ledger's record as it was before the return) must not bring the cap
// back above the share the return left.
func TestAStaleSyncDoesNotUndoAReturn(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		tg := h.target("stale-sync", floored(0))
		e := h.engine(inDC("dc1"), func(c *Config) { c.RightsIdle = time.Hour })
		mustUpdate(t, e, tg, 100, "c1")
		mustUpdate(t, e, tg, -10, "a1")
		stale, err := e.readRights(ctxT(t), tg, "")
		if err != nil {
			t.Fatal(err)
		}
		e.returnShare(ctxT(t), tg)
		local, err := e.readRights(ctxT(t), tg, "dc1")
		if err != nil {
			t.Fatal(err)
		}
		rec, err := e.readRights(ctxT(t), tg, "")
		if err != nil {
			t.Fatal(err)
		}
		returned := rec.grants[sharePrefix+"dc1"].total
		if returned >= stale.grants[sharePrefix+"dc1"].total || local.cap != returned {
			t.Fatalf("after the return: share %d (was %d), cap %d; want a smaller share, and the cap equal to it", returned, stale.grants[sharePrefix+"dc1"].total, local.cap)
		}
		if err := e.syncShare(ctxT(t), tg, stale); err != nil {
			t.Fatal(err)
		}
		after, err := e.readRights(ctxT(t), tg, "dc1")
		if err != nil {
			t.Fatal(err)
		}
		if after.cap != returned {
			t.Fatalf("a stale sync moved the cap from %d to %d, above the share of %d", returned, after.cap, returned)
		}
	})
}

// A return whose second step did not land leaves the cap below the share,
// set from the ledger's record as it still is. The next raise finishes the
// return and then raises: the data center is not held below its share.
func TestARaiseFinishesAnUnfinishedReturn(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		tg := h.target("unfinished-return", floored(0))
		e := h.engine(inDC("dc1"), func(c *Config) { c.RightsIdle = time.Hour })
		mustUpdate(t, e, tg, 100, "c1")
		mustUpdate(t, e, tg, -10, "a1") // share 55; the actor holds 32 of it
		rec, err := e.readRights(ctxT(t), tg, "")
		if err != nil {
			t.Fatal(err)
		}
		local, err := e.readRights(ctxT(t), tg, "dc1")
		if err != nil {
			t.Fatal(err)
		}
		// The return's first step, alone.
		lower := local.clone()
		lower.cap, lower.synced = local.held(), rec.version
		lower.version++
		if applied, err := e.swapRights(ctxT(t), tg, "dc1", local.version, lower); err != nil || !applied {
			t.Fatalf("lowering the cap: %v, %v", applied, err)
		}
		mustUpdate(t, e, tg, -60, "a2") // needs 70 in all: more than the 55 the share had
		wantValue(t, e, tg, 30)
		if err := e.Close(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		wantSharesSettled(t, h.engine(), tg)
	})
}

// A return that read the ledger's record before a raise and a second
// return moved it on must not stamp the cap with its older version:
// a raise's second step carrying the version in between would then lift
// the cap above the share. (The value coincidence that lets the late
// return past its first check is set up by hand.)
func TestALateReturnDoesNotStampAnOlderVersion(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		tg := h.target("late-return", floored(0))
		e := h.engine(inDC("dc1"), func(c *Config) { c.RightsIdle = time.Hour })
		read := func(dc string) *rights {
			t.Helper()
			r, err := e.readRights(ctxT(t), tg, dc)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		mustUpdate(t, e, tg, 1000, "c1")
		mustUpdate(t, e, tg, -10, "a1")
		early := read("") // the late return's read
		s1 := early.grants[sharePrefix+"dc1"].total
		if err := e.raiseShare(ctxT(t), tg, read("dc1"), 100); err != nil {
			t.Fatal(err)
		}
		raised := read("") // what a stalled second step of that raise carries
		if raised.grants[sharePrefix+"dc1"].total <= s1 {
			t.Fatalf("the raise left the share at %+v", raised.grants)
		}
		// A return from the raised version that happens to bring the cap
		// back to exactly the early share.
		local := read("dc1")
		lower := local.clone()
		lower.cap, lower.synced = s1, raised.version
		lower.version++
		if applied, err := e.swapRights(ctxT(t), tg, "dc1", local.version, lower); err != nil || !applied {
			t.Fatal(applied, err)
		}
		back := raised.clone()
		setShare(back, sharePrefix+"dc1", s1)
		back.version++
		if applied, err := e.swapRights(ctxT(t), tg, "", raised.version, back); err != nil || !applied {
			t.Fatal(applied, err)
		}
		// The late return, then the stalled sync.
		e.returnShareFrom(ctxT(t), tg, early, read("dc1"))
		if err := e.syncShare(ctxT(t), tg, raised); err != nil {
			t.Fatal(err)
		}
		if c, s := read("dc1").cap, read("").grants[sharePrefix+"dc1"].total; c > s {
			t.Fatalf("the cap is %d, above the share of %d", c, s)
		}
	})
}
