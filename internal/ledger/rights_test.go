package ledger

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

func floored(floor int64) Options {
	return Options{Floored: true, Floor: floor, EntryRetention: -1}
}

func updateErr(t *testing.T, e *Engine, tg Target, amount int64, id string) error {
	t.Helper()
	_, err := e.Update(ctxT(t), tg, amount, id)
	return err
}

// wantRecordSettled checks the rights record once every engine has
// closed: no actor holds rights, and what the record counts as spent is
// the ledger's debit total, so nothing was granted twice or lost.
func wantRecordSettled(t *testing.T, e *Engine, tg Target) {
	t.Helper()
	rec, err := e.readRights(ctxT(t), tg)
	if err != nil {
		t.Fatal(err)
	}
	_, n, err := mustRead(t, e, tg).Totals()
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.grants) != 0 || rec.spent != n {
		t.Fatalf("rights record after every engine closed: spent %d, grants %v; want spent %d (the debit total), no grants", rec.spent, rec.grants, n)
	}
}

func TestFloorRefusesDebitsBelowIt(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		for _, mode := range []Mode{ModeExact, ModeConcurrentRetriesMayDouble} {
			t.Run(string(mode), func(t *testing.T) {
				o := floored(0)
				o.Mode = mode
				tg := h.target("wallet-"+string(mode), o)
				e := h.engine()
				if err := updateErr(t, e, tg, -1, "d0"); !errors.Is(err, ErrBelowFloor) || !errors.Is(err, ErrNotApplied) {
					t.Fatalf("debit of an empty wallet: %v; want ErrBelowFloor and ErrNotApplied", err)
				}
				mustUpdate(t, e, tg, 100, "c1")
				mustUpdate(t, e, tg, -60, "d1")
				if err := updateErr(t, e, tg, -41, "d2"); !errors.Is(err, ErrBelowFloor) {
					t.Fatalf("debit of 41 from 40: %v; want ErrBelowFloor", err)
				}
				wantValue(t, e, tg, 40)
				mustUpdate(t, e, tg, -40, "d3")
				wantValue(t, e, tg, 0)
				// A refused request is not recorded: once the balance covers
				// it, the same request id applies.
				mustUpdate(t, e, tg, 41, "c2")
				if r := mustUpdate(t, e, tg, -41, "d2"); !r.Applied {
					t.Fatal("the refused request id was not applied once the balance covered it")
				}
				if r := mustUpdate(t, e, tg, -41, "d2"); r.Applied {
					t.Fatal("a retry of an applied debit was applied again")
				}
				wantValue(t, e, tg, 0)
				wantKnown(t, mustRead(t, e, tg), map[string]bool{"d0": false, "d2": true})
			})
		}
	})
}

func TestFloorOverdraftLine(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		tg := h.target("overdraft", floored(-50))
		e := h.engine()
		mustUpdate(t, e, tg, -30, "d1")
		mustUpdate(t, e, tg, -20, "d2")
		if err := updateErr(t, e, tg, -1, "d3"); !errors.Is(err, ErrBelowFloor) {
			t.Fatalf("debit past the overdraft line: %v; want ErrBelowFloor", err)
		}
		wantValue(t, e, tg, -50)
		// Credits are never refused, and a batch's debits are taken in
		// order while the balance lasts; the batch's own credit does not
		// count until it is written.
		mustUpdate(t, e, tg, 11, "c1")
		out := e.UpdateBatch(ctxT(t), tg, []Change{{10, "c2"}, {-5, "d4"}, {-6, "d5"}, {-5, "d6"}})
		if out[0].Err != nil || out[1].Err != nil || out[2].Err != nil || !errors.Is(out[3].Err, ErrBelowFloor) {
			t.Fatalf("batch outcomes %+v; want the last debit refused, the rest applied", out)
		}
		wantValue(t, e, tg, -40)
	})
}

// TestFloorRightsMoveBetweenProcesses: a process holding rights it does
// not use keeps another from using the balance until it closes; then the
// other gets all of it.
func TestFloorRightsMoveBetweenProcesses(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		tg := h.target("shared-wallet", floored(0))
		a, b := h.engine(), h.engine()
		mustUpdate(t, a, tg, 100, "c1")
		mustUpdate(t, a, tg, -1, "a1") // asks for more than 1: half of what is free
		err := updateErr(t, b, tg, -99, "b1")
		if !errors.Is(err, ErrRightsHeld) || !errors.Is(err, ErrNotApplied) {
			t.Fatalf("debit of the whole balance while another process holds rights: %v; want ErrRightsHeld", err)
		}
		if err := a.Close(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		mustUpdate(t, b, tg, -99, "b1")
		wantValue(t, b, tg, 0)
		if err := b.Close(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		wantRecordSettled(t, h.engine(), tg)
	})
}

// TestFloorReclaimsAStoppedActorsRights: a process that stops without
// returning its rights keeps them for its lease plus the late-write
// window; after that the next grant reclaims what it did not use.
func TestFloorReclaimsAStoppedActorsRights(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		tg := h.target("stopped-holder", floored(0))
		short := func(c *Config) { c.RightsLease, c.LateWriteWindow = time.Minute, time.Hour }
		dead, live := h.engine(short), h.engine(short)
		mustUpdate(t, live, tg, 100, "c1")
		mustUpdate(t, dead, tg, -10, "d1") // holds 10 + 45, never returns them
		if err := updateErr(t, live, tg, -90, "l1"); !errors.Is(err, ErrRightsHeld) {
			t.Fatalf("before the lease ended: %v; want ErrRightsHeld", err)
		}
		h.clk.Advance(time.Minute + time.Hour - time.Second) // lease + window, not past it
		if err := updateErr(t, live, tg, -90, "l1"); !errors.Is(err, ErrRightsHeld) {
			t.Fatalf("within the late-write window: %v; want ErrRightsHeld", err)
		}
		h.clk.Advance(2 * time.Second)
		mustUpdate(t, live, tg, -90, "l1")
		wantValue(t, live, tg, 0)
		rec, err := live.readRights(ctxT(t), tg)
		if err != nil {
			t.Fatal(err)
		}
		if rec.spent != 10 || len(rec.grants) != 1 {
			t.Fatalf("after the reclaim: spent %d, grants %v; want the stopped actor's 10 spent and only the live actor left", rec.spent, rec.grants)
		}
		// The stopped process's engine comes back: its lease ended, so it
		// must get new rights, and the balance has none left.
		if err := updateErr(t, dead, tg, -1, "d2"); !errors.Is(err, ErrBelowFloor) {
			t.Fatalf("debit by the reclaimed actor: %v; want ErrBelowFloor", err)
		}
		wantValue(t, live, tg, 0)
	})
}

// TestFloorNoDebitSentAfterTheLease: a write whose first attempt timed out
// is not resubmitted once the actor's lease has ended, since its rights
// may by then be reclaimed counting only what had been sent.
func TestFloorNoDebitSentAfterTheLease(t *testing.T) {
	onEachDriver(t, func(t *testing.T, d driver.Driver) {
		fs := &faultyStore{Ledgers: d}
		h := newHarness(t, fs)
		tg := h.target("lease-ends", floored(0))
		e := h.engine(func(c *Config) { c.RightsLease = time.Minute })
		mustUpdate(t, e, tg, 100, "c1")
		var sent atomic.Int32
		fs.setWriteFault(func(p *driver.WriteLedgerRowParams) fault {
			if sent.Add(1) == 1 {
				h.clk.Advance(2 * time.Minute) // the lease ends while the first attempt is out
				return unknownNoLand
			}
			return pass
		})
		err := updateErr(t, e, tg, -10, "d1")
		if !isUnknown(err) || !errors.Is(err, errLeaseEnded) {
			t.Fatalf("debit whose lease ended between attempts: %v; want an unknown outcome ending with the lease", err)
		}
		if n := sent.Load(); n != 1 {
			t.Fatalf("%d write attempts; want 1: none after the lease ended", n)
		}
	})
}

// TestFloorUnknownGrantOutcome: a grant whose compare-and-set timed out
// after it landed is found by the next read of the record, and the
// record still accounts for every debit once.
func TestFloorUnknownGrantOutcome(t *testing.T) {
	onEachDriver(t, func(t *testing.T, d driver.Driver) {
		fs := &faultyStore{Ledgers: d}
		h := newHarness(t, fs)
		tg := h.target("unknown-grant", floored(0))
		e := h.engine()
		mustUpdate(t, e, tg, 100, "c1")
		var swaps atomic.Int32
		fs.swapFault = func(p *driver.SwapLedgerRightsParams) fault {
			switch swaps.Add(1) {
			case 1:
				return landThenUnknown
			case 2:
				return unknownNoLand
			}
			return pass
		}
		mustUpdate(t, e, tg, -30, "d1")
		mustUpdate(t, e, tg, -70, "d2")
		if err := updateErr(t, e, tg, -1, "d3"); !errors.Is(err, ErrBelowFloor) {
			t.Fatalf("debit of an empty wallet: %v; want ErrBelowFloor", err)
		}
		if err := e.Close(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		wantRecordSettled(t, h.engine(), tg)
	})
}

// TestFloorHoldsUnderConcurrentDebits: several processes debit one wallet
// at once, in batches and one by one, with retries; no read ever sees it
// below the floor, every acknowledged debit counts once, and once they
// close the record accounts for exactly the debits made.
func TestFloorHoldsUnderConcurrentDebits(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		tg := h.target("busy-wallet", floored(0))
		const (
			processes = 4
			callers   = 3
			debits    = 40
		)
		var engines []*Engine
		for range processes {
			engines = append(engines, h.engine())
		}
		mustUpdate(t, engines[0], tg, 1000, "seed")
		var (
			applied     atomic.Int64
			refused     atomic.Int64
			credited    atomic.Int64
			wg          sync.WaitGroup
			stop        = make(chan struct{})
			readerErr   error
			readerWG    sync.WaitGroup
			readerCount int
		)
		credited.Store(1000)
		readerWG.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				v, err := mustRead(t, engines[0], tg).Value()
				readerCount++
				if err != nil || v < 0 {
					readerErr = fmt.Errorf("a read saw %d, %v", v, err)
					return
				}
			}
		})
		for p, e := range engines {
			for c := range callers {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(p), uint64(c)))
					for i := range debits {
						id := fmt.Sprintf("p%d-c%d-%d", p, c, i)
						amount := -int64(1 + rng.IntN(20))
						if i%10 == 9 {
							amount = int64(rng.IntN(30) + 1) // a credit now and then
						}
						for try := 0; ; try++ {
							r, err := e.Update(context.Background(), tg, amount, id)
							switch {
							case err == nil && r.Applied:
								if amount > 0 {
									credited.Add(amount)
								} else {
									applied.Add(-amount)
								}
							case err == nil:
								t.Errorf("%s: answered applied: false, but no copy of it was applied before", id)
							case errors.Is(err, ErrRightsHeld) && try < 3:
								continue
							case errors.Is(err, ErrBelowFloor), errors.Is(err, ErrRightsHeld):
								refused.Add(1)
							default:
								t.Errorf("%s: %v", id, err)
							}
							break
						}
					}
				})
			}
		}
		wg.Wait()
		close(stop)
		readerWG.Wait()
		if readerErr != nil {
			t.Fatal(readerErr)
		}
		want := credited.Load() - applied.Load()
		wantValue(t, engines[0], tg, want)
		t.Logf("debited %d, credited %d, %d refused, %d reads during the run", applied.Load(), credited.Load(), refused.Load(), readerCount)
		if applied.Load() == 0 {
			t.Fatal("no debit was applied")
		}
		for _, e := range engines {
			if err := e.Close(ctxT(t)); err != nil {
				t.Fatal(err)
			}
		}
		final := h.engine()
		wantRecordSettled(t, final, tg)
		// Every unit above the floor is free again: one debit takes it all.
		if want > 0 {
			mustUpdate(t, final, tg, -want, "all-of-it")
		}
		wantValue(t, final, tg, 0)
	})
}

func TestRightsEncodingRoundTrip(t *testing.T) {
	for _, r := range []*rights{
		{version: 1, grants: map[string]grant{}},
		{version: 7, spent: 1 << 62, grants: map[string]grant{"a-1": {total: 5, until: -3}, "b-2\x00": {total: 0, until: 1 << 60}}},
	} {
		got, err := decodeRights(r.version, encodeRights(r))
		if err != nil {
			t.Fatal(err)
		}
		if got.version != r.version || got.spent != r.spent || len(got.grants) != len(r.grants) {
			t.Fatalf("round trip of %+v gave %+v", r, got)
		}
		for a, g := range r.grants {
			if got.grants[a] != g {
				t.Fatalf("round trip of %+v gave %+v", r, got)
			}
		}
	}
	for _, bad := range []struct {
		version int64
		b       []byte
	}{
		{0, []byte{1}},
		{-1, nil},
		{1, nil},
		{1, []byte{2, 0, 0}},
		{1, []byte{1, 1, 0}},            // negative spent
		{1, []byte{1, 0, 0, 0}},         // trailing byte
		{1, []byte{1, 0, 1, 0}},         // an empty actor id
		{1, []byte{1, 0, 1, 1, 'a', 1}}, // negative grant
		{1, []byte{1, 0, 0x80, 0x00}},   // a non-minimal varint
		{1, []byte{1, 0, 1, 5, 'a', 0}}, // a length past the end
		{1, []byte{1, 0, 2, 1, 'b', 0, 0, 1, 'a', 0, 0}}, // out of order
	} {
		if _, err := decodeRights(bad.version, bad.b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeRights(%d, %x) = %v; want ErrCorrupt", bad.version, bad.b, err)
		}
	}
}

func FuzzDecodeRights(f *testing.F) {
	f.Add(int64(1), encodeRights(&rights{version: 1, spent: 3, grants: map[string]grant{"x": {total: 9, until: 4}}}))
	f.Add(int64(0), []byte{})
	f.Fuzz(func(t *testing.T, version int64, b []byte) {
		r, err := decodeRights(version, b)
		if err != nil {
			return
		}
		if version == 0 {
			return
		}
		again := encodeRights(r)
		if string(again) != string(b) {
			t.Fatalf("decoded %x, encoded back as %x: two encodings of one record", b, again)
		}
		if r.spent < 0 || r.held() < 0 {
			t.Fatalf("negative amounts decoded: %+v", r)
		}
	})
}

// TestFloorRetryOfAClaimedDebitIsNotRefused: a copy of a debit whose
// first copy holds its claim on another server, on its way to being
// written, is answered as a lost claim is (applied: false once the first
// lands), not refused by the floor, although the rights it would need are
// the first copy's.
func TestFloorRetryOfAClaimedDebitIsNotRefused(t *testing.T) {
	onEachDriver(t, func(t *testing.T, d driver.Driver) {
		fs := &faultyStore{Ledgers: d}
		h := newHarness(t, fs)
		tg := h.target("claimed-debit", floored(0))
		first, retry := h.engine(), h.engine()
		mustUpdate(t, first, tg, 10, "c1")
		gate := make(chan struct{})
		fs.writeGate = func(p *driver.WriteLedgerRowParams) <-chan struct{} {
			if st, err := DecodeActor(p.Row.State); err == nil && st.N.Seq() > 0 {
				return gate // the debit's write
			}
			return nil
		}
		firstDone := make(chan error, 1)
		go func() {
			_, err := first.Update(context.Background(), tg, -10, "d1")
			firstDone <- err
		}()
		// Wait until the first copy holds the claim.
		for deadline := time.Now().Add(10 * time.Second); ; {
			if _, ok, err := d.ReadClaim(ctxT(t), &driver.ReadClaimParams{Namespace: tg.Namespace, Ledger: tg.Ledger, RequestID: "d1", Now: driver.Micros(h.clk.Now())}); err == nil && ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the first copy never claimed its id")
			}
			time.Sleep(5 * time.Millisecond)
		}
		retryDone := make(chan Outcome, 1)
		go func() {
			r, err := retry.Update(context.Background(), tg, -10, "d1")
			retryDone <- Outcome{r, err}
		}()
		time.Sleep(100 * time.Millisecond) // the retry waits on the claim
		close(gate)
		if err := <-firstDone; err != nil {
			t.Fatal(err)
		}
		if out := <-retryDone; out.Err != nil || out.Applied {
			t.Fatalf("retry of a debit claimed elsewhere: %+v; want applied: false", out)
		}
		wantValue(t, first, tg, 0)
	})
}
