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
		e := h.engine(func(c *Config) { c.WriteTimeout = time.Second })
		tg := h.target("w", Options{Mode: ModeExact, RetryCount: -1})
		if _, err := e.Update(ctxT(t), tg, 10, "late"); !errors.Is(err, ErrNotApplied) {
			t.Fatalf("claim timed out, nothing found on withdrawal: %v, want ErrNotApplied", err)
		}
		// The store now finishes the transaction the engine gave up on.
		mu.Lock()
		p := *sent
		mu.Unlock()
		res, err := d.ClaimRequest(ctxT(t), &p)
		if err != nil || !res.Won {
			t.Fatalf("landing the late claim: %+v, %v", res, err)
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
