package ledger

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// A claim whose transaction timed out is withdrawn; if the withdrawal finds
// nothing, the claim may still land afterwards (the store finishes the
// transaction on its own). It must not be left behind: it names a retired
// actor that never writes the entry, and would make every retry of the
// request answer "unknown" until it expires.
func TestLateClaimIsWithdrawn(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		d := h.store
		fs := &faultyStore{Ledgers: d}
		h.store = fs
		var mu sync.Mutex
		var sent *driver.ClaimRequestParams
		fs.setClaimFault(func(p *driver.ClaimRequestParams) fault {
			mu.Lock()
			defer mu.Unlock()
			cp := *p
			sent = &cp
			return unknownNoLand
		})
		// WriteTimeout bounds the real withdrawal (a Paxos round, which a
		// loaded cluster can take over a second to finish) and, twice over,
		// how long the late claim is looked for in the background.
		e := h.engine(func(c *Config) { c.WriteTimeout = 5 * time.Second })
		tg := h.target("w", Options{Mode: ModeExact, RetryCount: -1})
		if _, err := e.Update(ctxT(t), tg, 10, "late"); !errors.Is(err, ErrNotApplied) {
			t.Fatalf("claim timed out, nothing found on withdrawal: %v, want ErrNotApplied", err)
		}
		// The store now finishes the transaction the engine gave up on.
		mu.Lock()
		p := *sent
		mu.Unlock()
		if won, err := claimSurely(t, d, &p); err != nil || !won {
			t.Fatalf("landing the late claim: %v, %v", won, err)
		}
		fs.setClaimFault(nil)
		deadline := time.Now().Add(10 * time.Second)
		for e.Stats().LateClaimsWithdrawn.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if e.Stats().LateClaimsWithdrawn.Load() != 1 {
			t.Fatal("the late claim was not withdrawn")
		}
		// A retry on another process is applied, not blocked.
		other := h.engine()
		if r, err := other.Update(ctxT(t), tg, 10, "late"); err != nil || !r.Applied {
			t.Fatalf("retry after the late claim was withdrawn: %+v, %v", r, err)
		}
		wantValue(t, other, tg, 10)
	})
}

// A claim this actor lost, after an attempt of unknown outcome, may still
// be stored by that attempt once the winner withdraws its own, naming a
// number the actor would give another request; a retry elsewhere would
// then take that request's entry for this one. So the actor retires (it
// never reaches the number) and withdraws the late claim.
func TestALostClaimThatMayLandLateRetiresTheActor(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		d := h.store
		fs := &faultyStore{Ledgers: d}
		tg := h.target("lost-late", Options{Mode: ModeExact})
		winner := driver.Claim{Actor: "elsewhere", Seq: 1, Amount: 5}
		if won, err := claimSurely(t, d, &driver.ClaimRequestParams{
			Namespace: tg.Namespace, Ledger: tg.Ledger, RequestID: "r", Claim: winner,
			TTL: tg.Options.ClaimTTL, Now: driver.Micros(h.clk.Now()),
		}); err != nil || !won {
			t.Fatalf("the winner's claim: %v, %v", won, err)
		}
		var mu sync.Mutex
		var sent *driver.ClaimRequestParams
		fs.setClaimFault(func(p *driver.ClaimRequestParams) fault {
			mu.Lock()
			defer mu.Unlock()
			if p.RequestID == "r" && sent == nil {
				cp := *p
				sent = &cp
				return unknownNoLand // the resubmission then loses to the winner
			}
			return pass
		})
		a := h.engine(func(c *Config) { c.Store = fs; c.ClaimWait = 100 * time.Millisecond; c.WriteTimeout = 5 * time.Second })
		if _, err := a.Update(ctxT(t), tg, 5, "r"); !errors.Is(err, ErrUnknownOutcome) {
			t.Fatalf("r, claimed elsewhere, never written there: %v; want ErrUnknownOutcome", err)
		}
		// The winner withdraws; a's first attempt lands after all.
		if ok, err := releaseSurely(t, d, &driver.ReleaseClaimParams{Namespace: tg.Namespace, Ledger: tg.Ledger, RequestID: "r", Expect: winner}, h.clk.Now()); err != nil || !ok {
			t.Fatalf("withdrawing the winner's claim: %v, %v", ok, err)
		}
		mu.Lock()
		late := *sent
		mu.Unlock()
		if won, err := claimSurely(t, d, &late); err != nil || !won {
			t.Fatalf("landing a's late claim: %v, %v", won, err)
		}
		if r2 := mustUpdate(t, a, tg, 5, "r2"); r2.Actor == late.Claim.Actor {
			t.Fatalf("r2 went to actor %s, which a late claim of r names at entry %d: the actor was not retired", r2.Actor, late.Claim.Seq)
		}
		// Retries elsewhere never take r2's entry for r, and once the late
		// claim is withdrawn r is applied.
		other := h.engine(func(c *Config) { c.ClaimWait = 100 * time.Millisecond })
		// The withdrawal runs in a's background, with retries; on a loaded
		// CI machine with Cassandra it took longer than 15 s once.
		deadline := time.Now().Add(time.Minute)
		for {
			res, err := other.Update(ctxT(t), tg, 5, "r")
			if err == nil {
				if !res.Applied {
					t.Fatalf("retry of r answered 'already applied' (actor %s), but r was never written", res.Actor)
				}
				break
			}
			if !errors.Is(err, ErrUnknownOutcome) || time.Now().After(deadline) {
				t.Fatalf("retry of r: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		wantValue(t, other, tg, 10)
	})
}

// The tests' own claims and releases are Paxos rounds, which on a busy
// cluster can lose to contention and end with their outcome unknown. These
// repeat them, as the Ledgers contract allows, until the outcome is known.

// claimSurely reports whether p.Claim is the stored claim after
// ClaimRequest.
func claimSurely(t *testing.T, d driver.Ledgers, p *driver.ClaimRequestParams) (bool, error) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		res, err := d.ClaimRequest(ctxT(t), p)
		if errors.Is(err, driver.ErrUnknownOutcome) && attempt < 5 {
			continue
		}
		// A repeat finds the claim an unknown attempt stored.
		return err == nil && res.Current == p.Claim, err
	}
}

// releaseSurely reports whether p.Expect is no longer stored after
// ReleaseClaim removed it (not some earlier release or expiry).
func releaseSurely(t *testing.T, d driver.Ledgers, p *driver.ReleaseClaimParams, now time.Time) (bool, error) {
	t.Helper()
	unknown := false
	for attempt := 1; ; attempt++ {
		ok, err := d.ReleaseClaim(ctxT(t), p)
		switch {
		case errors.Is(err, driver.ErrUnknownOutcome) && attempt < 5:
			unknown = true
			continue
		case err != nil || ok || !unknown:
			return ok, err
		}
		// Nothing removed now: an unknown attempt did if the claim is gone.
		c, found, err := d.ReadClaim(ctxT(t), &driver.ReadClaimParams{Namespace: p.Namespace, Ledger: p.Ledger, RequestID: p.RequestID, Now: driver.Micros(now)})
		return err == nil && (!found || c != p.Expect), err
	}
}
