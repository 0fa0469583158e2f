package ledger

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// gateFirstWrite holds the store's first ledger row write until the
// returned release is called; arrived is closed when that write waits.
func gateFirstWrite(fs *faultyStore) (arrived <-chan struct{}, release func()) {
	at, open := make(chan struct{}), make(chan struct{})
	var once, first sync.Once
	fs.mu.Lock()
	fs.writeGate = func(*driver.WriteLedgerRowParams) <-chan struct{} {
		var ch <-chan struct{}
		first.Do(func() { close(at); ch = open })
		return ch
	}
	fs.mu.Unlock()
	return at, func() { once.Do(func() { close(open) }) }
}

// waitQueued waits until n requests wait in the ledger's slot.
func waitQueued(t *testing.T, e *Engine, tg Target, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.mu.Lock()
		el, ok := e.slots[slotKey{tg.Namespace, tg.Ledger}]
		e.mu.Unlock()
		if ok {
			s := el.Value.(*slot)
			s.mu.Lock()
			q := len(s.queue)
			s.mu.Unlock()
			if q >= n {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests never queued", n)
		}
		time.Sleep(time.Millisecond)
	}
}

func (f *faultyStore) writeCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

// While an actor's write is under way, requests for its ledger queue up,
// and the next write carries all of them: one row write for twenty
// requests, each acknowledged as applied, the value their sum.
func TestGroupCommitCarriesQueuedRequestsInOneWrite(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		for _, strict := range []bool{false, true} {
			t.Run(fmt.Sprint("strict=", strict), func(t *testing.T) {
				fs := &faultyStore{Ledgers: h.store}
				e := h.engine(func(c *Config) { c.Store = fs })
				tg := h.target(fmt.Sprint("group-", strict), Options{Mode: modeOf(strict)})
				arrived, release := gateFirstWrite(fs)
				defer release()
				first := make(chan error, 1)
				go func() { _, err := e.Update(ctxT(t), tg, 1000, "first"); first <- err }()
				<-arrived
				const n = 20
				var (
					wg   sync.WaitGroup
					want = int64(1000)
					res  = make([]Result, n)
					errs = make([]error, n)
				)
				for i := range n {
					amount := int64(i + 1)
					if i%2 == 1 {
						amount = -amount
					}
					want += amount
					wg.Go(func() { res[i], errs[i] = e.Update(ctxT(t), tg, amount, fmt.Sprint("q", i)) })
				}
				waitQueued(t, e, tg, n)
				release()
				wg.Wait()
				if err := <-first; err != nil {
					t.Fatal(err)
				}
				for i := range n {
					if errs[i] != nil || !res[i].Applied {
						t.Fatalf("request q%d: %+v, %v", i, res[i], errs[i])
					}
				}
				if w := fs.writeCount(); w != 2 {
					t.Fatalf("%d row writes for 21 requests, want 2 (the first, then one for the queued twenty)", w)
				}
				st := mustRead(t, e, tg)
				if st.Len() != 1 {
					t.Fatalf("%d actor rows, want 1", st.Len())
				}
				wantValue(t, e, tg, want)
				for i := range n {
					if r := mustUpdate(t, e, tg, res0(i), fmt.Sprint("q", i)); r.Applied {
						t.Fatalf("retry of q%d applied again", i)
					}
				}
				wantValue(t, e, tg, want)
			})
		}
	})
}

func res0(i int) int64 {
	if i%2 == 1 {
		return -int64(i + 1)
	}
	return int64(i + 1)
}

// A batch answers each change on its own: new ones applied, retries
// recognised, a reused id refused, bad changes refused without writing,
// an id repeated inside the batch recognised as a retry.
func TestUpdateBatchAnswersEachChange(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		for _, strict := range []bool{false, true} {
			t.Run(fmt.Sprint("strict=", strict), func(t *testing.T) {
				e := h.engine()
				tg := h.target(fmt.Sprint("batch-", strict), Options{Mode: modeOf(strict)})
				mustUpdate(t, e, tg, 5, "old")
				mustUpdate(t, e, tg, math.MaxInt64-100, "big")
				outs := e.UpdateBatch(ctxT(t), tg, []Change{
					{Amount: 10, RequestID: "a"},
					{Amount: 5, RequestID: "old"},   // a retry
					{Amount: 6, RequestID: "old"},   // the id reused
					{Amount: 0, RequestID: "zero"},  // invalid
					{Amount: -3, RequestID: "b"},    // a debit
					{Amount: 10, RequestID: "a"},    // repeated in the batch
					{Amount: 11, RequestID: "a"},    // repeated with another amount
					{Amount: 90, RequestID: "over"}, // past int64 with "big", "old" and "a"
					{Amount: 1, RequestID: ""},      // invalid id
				})
				check := func(i int, applied bool, want error) {
					t.Helper()
					o := outs[i]
					if want != nil {
						if !errors.Is(o.Err, want) {
							t.Errorf("change %d: %v, want %v", i, o.Err, want)
						}
						return
					}
					if o.Err != nil || o.Applied != applied {
						t.Errorf("change %d: applied %v, %v; want applied %v", i, o.Applied, o.Err, applied)
					}
				}
				check(0, true, nil)
				check(1, false, nil)
				check(2, false, ErrRequestConflict)
				check(3, false, ErrInvalidEntry)
				check(4, true, nil)
				check(5, false, nil)
				check(6, false, ErrRequestConflict)
				check(7, false, ErrOverflow)
				check(8, false, ErrInvalidEntry)
				wantValue(t, e, tg, 5+math.MaxInt64-100+10-3)
			})
		}
	})
}

// A claim whose outcome stays unknown may be stored, naming its entry
// number. The batch writes the requests numbered below it, answers those
// from it on "not applied" (withdrawing their claims) and retires the
// actor, so no entry at that number is ever written without its request.
// Retries then apply each request exactly once.
func TestUnsureClaimStopsTheBatchAtItsEntry(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		fs := &faultyStore{Ledgers: h.store}
		e := h.engine(func(c *Config) { c.Store = fs })
		tg := h.target("unsure", Options{Mode: ModeExact, RetryCount: 1})
		fs.setClaimFault(func(p *driver.ClaimRequestParams) fault {
			if p.RequestID == "c3" {
				return unknownNoLand
			}
			return pass
		})
		changes := []Change{{1, "c1"}, {2, "c2"}, {4, "c3"}, {8, "c4"}, {-16, "d1"}}
		outs := e.UpdateBatch(ctxT(t), tg, changes)
		for i, want := range []error{nil, nil, ErrNotApplied, ErrNotApplied, nil} {
			o := outs[i]
			if want == nil && (o.Err != nil || !o.Applied) || want != nil && !errors.Is(o.Err, want) {
				t.Fatalf("%s: applied %v, %v; want %v", changes[i].RequestID, o.Applied, o.Err, want)
			}
		}
		if e.Stats().Retired.Load() != 1 {
			t.Fatalf("retired %d actors, want 1", e.Stats().Retired.Load())
		}
		wantValue(t, e, tg, 1+2-16)
		fs.setClaimFault(nil)
		other := h.engine()
		for i, c := range changes {
			r, err := other.Update(ctxT(t), tg, c.Amount, c.RequestID)
			if err != nil || r.Applied != (i == 2 || i == 3) {
				t.Fatalf("retry of %s: %+v, %v", c.RequestID, r, err)
			}
		}
		wantValue(t, e, tg, 1+2+4+8-16)
	})
}

// A write that fails fails every request it carries; retries then apply
// each once.
func TestAFailedBatchWriteFailsEveryRequestInIt(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		for _, strict := range []bool{false, true} {
			t.Run(fmt.Sprint("strict=", strict), func(t *testing.T) {
				fs := &faultyStore{Ledgers: h.store}
				e := h.engine(func(c *Config) { c.Store = fs })
				tg := h.target(fmt.Sprint("failed-", strict), Options{Mode: modeOf(strict), RetryCount: 1})
				fs.setWriteFault(func(*driver.WriteLedgerRowParams) fault { return unavailable })
				changes := []Change{{1, "a"}, {2, "b"}, {-4, "c"}}
				for i, o := range e.UpdateBatch(ctxT(t), tg, changes) {
					if !errors.Is(o.Err, ErrNotApplied) {
						t.Fatalf("%s: %+v, want ErrNotApplied", changes[i].RequestID, o)
					}
				}
				fs.setWriteFault(nil)
				for i, o := range e.UpdateBatch(ctxT(t), tg, changes) {
					if o.Err != nil || !o.Applied {
						t.Fatalf("retry of %s: %+v", changes[i].RequestID, o)
					}
				}
				wantValue(t, e, tg, -1)
			})
		}
	})
}

// A caller that gives up while its request waits in the queue withdraws
// it: not applied, and never written later. One that gives up after a
// write took it hears "unknown"; the write goes on, and a retry finds it.
func TestGivingUpWhileQueuedOrCarried(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		fs := &faultyStore{Ledgers: h.store}
		e := h.engine(func(c *Config) { c.Store = fs })
		tg := h.target("giving-up", Options{})
		arrived, release := gateFirstWrite(fs)
		defer release()
		carried, cancelCarried := context.WithCancel(ctxT(t))
		first := make(chan error, 1)
		go func() { _, err := e.Update(carried, tg, 1, "carried"); first <- err }()
		<-arrived
		queued, cancelQueued := context.WithCancel(ctxT(t))
		second := make(chan error, 1)
		go func() { _, err := e.Update(queued, tg, 2, "queued"); second <- err }()
		waitQueued(t, e, tg, 1)
		cancelQueued()
		if err := <-second; !errors.Is(err, ErrNotApplied) {
			t.Fatalf("queued request given up: %v, want ErrNotApplied", err)
		}
		cancelCarried()
		if err := <-first; !errors.Is(err, ErrUnknownOutcome) {
			t.Fatalf("carried request given up: %v, want ErrUnknownOutcome", err)
		}
		release()
		mustUpdate(t, e, tg, 4, "after") // runs once the carried write is done
		st := mustRead(t, e, tg)
		wantKnown(t, st, map[string]bool{"carried": true, "queued": false, "after": true})
		wantValue(t, e, tg, 5)
		if r := mustUpdate(t, e, tg, 1, "carried"); r.Applied {
			t.Fatal("retry of the carried request applied it again")
		}
	})
}

// In a batch, a request whose id another actor claimed waits for that
// actor's write without holding the others back from theirs.
func TestLostClaimInABatch(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		fs := &faultyStore{Ledgers: h.store}
		a := h.engine(func(c *Config) { c.Store = fs })
		b := h.engine()
		tg := h.target("lost-in-batch", Options{Mode: ModeExact})
		arrived, release := gateFirstWrite(fs)
		defer release()
		first := make(chan error, 1)
		go func() { _, err := a.Update(ctxT(t), tg, 7, "x"); first <- err }()
		<-arrived // a has claimed x; its write waits
		done := make(chan []Outcome, 1)
		go func() { done <- b.UpdateBatch(ctxT(t), tg, []Change{{7, "x"}, {3, "y"}}) }()
		deadline := time.Now().Add(10 * time.Second)
		for !mustRead(t, b, tg).Has("y") {
			if time.Now().After(deadline) {
				t.Fatal("y was not written while x waited for the other actor")
			}
			time.Sleep(5 * time.Millisecond)
		}
		release()
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		outs := <-done
		if outs[0].Err != nil || outs[0].Applied || outs[1].Err != nil || !outs[1].Applied {
			t.Fatalf("x: %+v; y: %+v; want x recognised as applied elsewhere, y applied", outs[0], outs[1])
		}
		wantValue(t, a, tg, 10)
	})
}
