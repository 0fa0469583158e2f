package ledger

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"sync/atomic"
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

// claimElsewhere stores claims of the ids by another actor, whose write
// is not seen yet: requests for them lose their claims.
func claimElsewhere(t *testing.T, h *harness, tg Target, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, err := h.store.ClaimRequest(ctxT(t), &driver.ClaimRequestParams{
			Namespace: tg.Namespace, Ledger: tg.Ledger, RequestID: id,
			Claim: driver.Claim{Actor: "elsewhere", Seq: 1, Amount: 1},
			TTL:   tg.Options.ClaimTTL, Now: driver.Micros(h.clk.Now()),
		}); err != nil {
			t.Fatal(err)
		}
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
// number. The batch writes the requests numbered below it and retires the
// actor, so no entry at that number is ever written without its request;
// the won requests after it go back to the queue and are applied by the
// next actor. Retries then apply each request exactly once.
func TestUnsureClaimStopsTheBatchAtItsEntry(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		fs := &faultyStore{Ledgers: h.store}
		e := h.engine(func(c *Config) { c.Store = fs })
		tg := h.target("unsure", Options{Mode: ModeExact, RetryCount: 1})
		var actors sync.Map // request id -> actor of its claims
		fs.setClaimFault(func(p *driver.ClaimRequestParams) fault {
			actors.Store(p.RequestID, p.Claim.Actor)
			if p.RequestID == "c3" {
				return unknownNoLand
			}
			return pass
		})
		changes := []Change{{1, "c1"}, {2, "c2"}, {4, "c3"}, {8, "c4"}, {-16, "d1"}}
		outs := e.UpdateBatch(ctxT(t), tg, changes)
		for i, want := range []error{nil, nil, ErrNotApplied, nil, nil} {
			o := outs[i]
			if want == nil && (o.Err != nil || !o.Applied) || want != nil && !errors.Is(o.Err, want) {
				t.Fatalf("%s: applied %v, %v; want %v", changes[i].RequestID, o.Applied, o.Err, want)
			}
		}
		if e.Stats().Retired.Load() != 1 {
			t.Fatalf("retired %d actors, want 1", e.Stats().Retired.Load())
		}
		first, _ := actors.Load("c1")
		if a, _ := actors.Load("c4"); a == first {
			t.Fatalf("c4 was written by the actor whose claim of c3 is unsure (%v)", a)
		}
		st := mustRead(t, e, tg)
		if a := st.Actor(first.(string)); a == nil || a.P.Seq() != 2 {
			t.Fatalf("the retired actor's credits reach entry %v, want 2 (below c3's entry 3)", a)
		}
		wantValue(t, e, tg, 1+2+8-16)
		fs.setClaimFault(nil)
		other := h.engine()
		for i, c := range changes {
			r, err := other.Update(ctxT(t), tg, c.Amount, c.RequestID)
			if err != nil || r.Applied != (i == 2) {
				t.Fatalf("retry of %s: %+v, %v", c.RequestID, r, err)
			}
		}
		wantValue(t, e, tg, 1+2+4+8-16)
	})
}

// A request written after one whose claim another actor holds must sit
// at the entry number its claim names: once it is folded out of the
// history, a retry on another actor is recognised through the claim
// (applied: false) only if the claimant's section reaches that number.
// With three lost claims before it in one batch, the request is claimed
// again under its real number.
func TestBatchRequestAfterLostClaimsKeepsItsClaimedEntry(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		short := func(c *Config) { c.ClaimWait = 100 * time.Millisecond }
		e := h.engine(short)
		tg := h.target("gap", Options{Mode: ModeExact, HistoryLength: 1})
		claimElsewhere(t, h, tg, "l1", "l2", "l3")
		outs := e.UpdateBatch(ctxT(t), tg, []Change{{1, "l1"}, {1, "l2"}, {1, "l3"}, {5, "w"}})
		if o := outs[3]; o.Err != nil || !o.Applied {
			t.Fatalf("w: %+v", o)
		}
		mustUpdate(t, e, tg, 1, "w2")
		mustUpdate(t, e, tg, 1, "w3") // folds w out of the history
		if mustRead(t, e, tg).Has("w") {
			t.Fatal("w is still in the history")
		}
		r, err := h.engine(short).Update(ctxT(t), tg, 5, "w")
		if err != nil || r.Applied {
			t.Fatalf("retry of the acknowledged w on another actor: %+v, %v; want applied false", r, err)
		}
		// The history holds the written requests once each, not the ones
		// whose claims another actor holds (nor w's first numbering).
		if got := history(t, e, tg, 2); !reflect.DeepEqual(got, []string{"w3:1", "w2:1", "w:5"}) {
			t.Fatalf("history %v, want w3, w2, w", got)
		}
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
				if got := history(t, e, tg, 10); !reflect.DeepEqual(got, []string{"c:-4", "b:2", "a:1"}) {
					t.Fatalf("history %v, want each request once", got)
				}
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
		// x waits for a's write while y is claimed and written and the
		// test sees it: some eight round trips, more than the default
		// ClaimWait on a loaded cluster.
		b := h.engine(func(c *Config) { c.ClaimWait = time.Minute })
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

// A write whose outcome stays unknown leaves every request it carries
// unknown; in exact mode the process finishes the write in the
// background, and retries anywhere then find each request applied once.
func TestBatchWriteOfUnknownOutcome(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		for _, strict := range []bool{false, true} {
			t.Run(fmt.Sprint("strict=", strict), func(t *testing.T) {
				fs := &faultyStore{Ledgers: h.store}
				e := h.engine(func(c *Config) { c.Store = fs })
				tg := h.target(fmt.Sprint("unknown-write-", strict), Options{Mode: modeOf(strict), RetryCount: 1})
				var writes atomic.Int32
				fs.setWriteFault(func(*driver.WriteLedgerRowParams) fault {
					if writes.Add(1) <= 2 { // the write and its one resubmission
						return unknownNoLand
					}
					return pass
				})
				changes := []Change{{1, "a"}, {2, "b"}, {-4, "c"}}
				for i, o := range e.UpdateBatch(ctxT(t), tg, changes) {
					if !errors.Is(o.Err, ErrUnknownOutcome) {
						t.Fatalf("%s: %+v, want ErrUnknownOutcome", changes[i].RequestID, o)
					}
				}
				other := h.engine()
				deadline := time.Now().Add(10 * time.Second)
				for _, c := range changes {
					for {
						r, err := other.Update(ctxT(t), tg, c.Amount, c.RequestID)
						if err == nil {
							// Exact mode: the background write landed first
							// (applied false). Otherwise nothing landed and
							// the retry applies it.
							if r.Applied == strict {
								t.Fatalf("retry of %s: applied %v", c.RequestID, r.Applied)
							}
							break
						}
						if !isUnknown(err) || time.Now().After(deadline) {
							t.Fatalf("retry of %s: %v", c.RequestID, err)
						}
						time.Sleep(10 * time.Millisecond)
					}
				}
				wantValue(t, e, tg, -1)
			})
		}
	})
}

// More changes than one write carries go in several writes, each change
// answered.
func TestUpdateBatchBeyondMaxBatch(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		fs := &faultyStore{Ledgers: h.store}
		e := h.engine(func(c *Config) { c.Store = fs })
		tg := h.target("beyond", Options{})
		n := 2*MaxBatch + 10
		changes := make([]Change, n)
		for i := range changes {
			changes[i] = Change{Amount: 1, RequestID: fmt.Sprint("r", i)}
		}
		for i, o := range e.UpdateBatch(ctxT(t), tg, changes) {
			if o.Err != nil || !o.Applied {
				t.Fatalf("change %d: %+v", i, o)
			}
		}
		if w := fs.writeCount(); w != 3 {
			t.Fatalf("%d row writes for %d changes, want 3", w, n)
		}
		wantValue(t, e, tg, int64(n))
	})
}

// When a batch's write fails and its actor is retired, the requests
// queued behind it move to the ledger's next actor and are applied there.
func TestQueueMovesToTheNextActorWhenOneIsRetired(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		fs := &faultyStore{Ledgers: h.store}
		e := h.engine(func(c *Config) { c.Store = fs })
		tg := h.target("moved", Options{RetryCount: -1})
		arrived, release := gateFirstWrite(fs)
		defer release()
		var writes atomic.Int32
		fs.setWriteFault(func(*driver.WriteLedgerRowParams) fault {
			if writes.Add(1) == 1 {
				return unavailable
			}
			return pass
		})
		first := make(chan error, 1)
		go func() { _, err := e.Update(ctxT(t), tg, 100, "first"); first <- err }()
		<-arrived
		old := a1Actor(t, e, tg)
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Go(func() { mustUpdate(t, e, tg, 1, fmt.Sprint("q", i)) })
		}
		waitQueued(t, e, tg, 10)
		release()
		wg.Wait()
		if err := <-first; !errors.Is(err, ErrNotApplied) {
			t.Fatalf("first: %v, want ErrNotApplied", err)
		}
		st := mustRead(t, e, tg)
		if st.Actor(old) != nil || st.Len() != 1 {
			t.Fatalf("rows: retired actor %v, %d rows; want only the next actor's", st.Actor(old), st.Len())
		}
		wantValue(t, e, tg, 10)
	})
}

// A panic while applying a batch (here: in the store) answers its
// requests "unknown" and retires the actor; the process goes on. A retry
// in the batch, answered before the panic, keeps its answer. (In exact
// mode the requests' claims would answer retries "unknown" until they
// expire, like any write abandoned midway; this mode lets the test apply
// them again at once.)
func TestAPanickingBatchAnswersUnknown(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		ps := &panickyStore{Ledgers: h.store}
		e := h.engine(func(c *Config) { c.Store = ps })
		tg := h.target("panic", Options{Mode: ModeConcurrentRetriesMayDouble})
		mustUpdate(t, e, tg, 4, "r0")
		ps.panics.Store(true)
		outs := e.UpdateBatch(ctxT(t), tg, []Change{{1, "a"}, {2, "b"}, {4, "r0"}})
		for i, o := range outs[:2] {
			if !errors.Is(o.Err, ErrUnknownOutcome) {
				t.Fatalf("change %d: %+v, want ErrUnknownOutcome", i, o)
			}
		}
		if o := outs[2]; o.Err != nil || o.Applied {
			t.Fatalf("the retry of r0: %+v, want its replay", o)
		}
		if e.Stats().Retired.Load() != 1 {
			t.Fatalf("retired %d actors, want 1", e.Stats().Retired.Load())
		}
		ps.panics.Store(false)
		mustUpdate(t, e, tg, 1, "a")
		mustUpdate(t, e, tg, 2, "b")
		wantValue(t, e, tg, 7)
	})
}

// A panic before a batch commits its requests (here: in the read) answers
// them "not applied": nothing was claimed or written for them, so the
// answer is exact, and in exact mode a retry applies them at once.
func TestAPanicBeforeTheCommitAnswersNotApplied(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		ps := &panickyStore{Ledgers: h.store}
		e := h.engine(func(c *Config) { c.Store = ps })
		tg := h.target("panic-read", Options{Mode: ModeExact})
		mustUpdate(t, e, tg, 5, "before")
		ps.readPanics.Store(true)
		for i, o := range e.UpdateBatch(ctxT(t), tg, []Change{{1, "a"}, {2, "b"}}) {
			if !errors.Is(o.Err, ErrNotApplied) || errors.Is(o.Err, ErrUnknownOutcome) {
				t.Fatalf("change %d: %+v, want ErrNotApplied only", i, o)
			}
		}
		if e.Stats().Retired.Load() != 1 {
			t.Fatalf("retired %d actors, want 1", e.Stats().Retired.Load())
		}
		ps.readPanics.Store(false)
		for _, c := range []Change{{1, "a"}, {2, "b"}} {
			if r := mustUpdate(t, e, tg, c.Amount, c.RequestID); !r.Applied {
				t.Fatalf("retry of %s: %+v, want it applied (nothing was claimed)", c.RequestID, r)
			}
		}
		wantValue(t, e, tg, 8)
	})
}

type panickyStore struct {
	driver.Ledgers
	panics       atomic.Bool // in writes
	readPanics   atomic.Bool // in reads of a ledger's rows
	rightsPanics atomic.Bool // in reads and swaps of a rights record
}

// panicIf panics when the fault is switched on.
func panicIf(on *atomic.Bool) {
	if on.Load() {
		panic("injected")
	}
}

func (p *panickyStore) ReadLedgerRights(ctx context.Context, rp *driver.ReadLedgerRightsParams) (driver.LedgerRights, error) {
	panicIf(&p.rightsPanics)
	return p.Ledgers.ReadLedgerRights(ctx, rp)
}

func (p *panickyStore) SwapLedgerRights(ctx context.Context, sp *driver.SwapLedgerRightsParams) (bool, driver.LedgerRights, error) {
	panicIf(&p.rightsPanics)
	return p.Ledgers.SwapLedgerRights(ctx, sp)
}

func (p *panickyStore) ReadLedger(ctx context.Context, rp *driver.ReadLedgerParams) ([]driver.LedgerRow, error) {
	panicIf(&p.readPanics)
	return p.Ledgers.ReadLedger(ctx, rp)
}

func (p *panickyStore) WriteLedgerRow(ctx context.Context, w *driver.WriteLedgerRowParams) error {
	panicIf(&p.panics)
	return p.Ledgers.WriteLedgerRow(ctx, w)
}

func (p *panickyStore) WriteLedgerRows(ctx context.Context, ws []driver.WriteLedgerRowParams) error {
	panicIf(&p.panics)
	return p.Ledgers.WriteLedgerRows(ctx, ws)
}

// With room for one actor, requests for two ledgers evict each other's
// idle actors while others wait in queues; every request is applied once.
func TestEvictionUnderLoad(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		e := h.engine(func(c *Config) { c.MaxActors = 1 })
		tgs := []Target{h.target("evict-a", Options{}), h.target("evict-b", Options{})}
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 20 {
					mustUpdate(t, e, tgs[(g+i)%2], 1, fmt.Sprint("g", g, "-", i))
				}
			})
		}
		wg.Wait()
		wantValue(t, e, tgs[0], 80)
		wantValue(t, e, tgs[1], 80)
	})
}

// A caller that gives up while the batch holding its request is still
// reading withdraws it too: the batch then neither claims nor writes it.
func TestGivingUpWhileTheBatchReads(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		e := h.engine()
		tg := h.target("giving-up-reading", Options{})
		ctx, cancel := context.WithCancel(ctxT(t))
		reading := make(chan struct{})
		resume := make(chan struct{})
		e.afterRead = func(_ Target, id string) {
			if id == "r" {
				close(reading)
				<-resume
			}
		}
		done := make(chan error, 1)
		go func() { _, err := e.Update(ctx, tg, 5, "r"); done <- err }()
		<-reading
		cancel()
		if err := <-done; !errors.Is(err, ErrNotApplied) {
			t.Fatalf("gave up while the batch read: %v, want ErrNotApplied", err)
		}
		close(resume)
		mustUpdate(t, e, tg, 1, "after")
		if st := mustRead(t, e, tg); st.Has("r") {
			t.Fatal("a withdrawn request was written")
		}
		wantValue(t, e, tg, 1)
	})
}

// lateClaimStore times out the first claim of one request id while keeping
// it "in flight", and lands it after that id's first withdrawal, as a
// Paxos round whose caller timed out can on Cassandra.
type lateClaimStore struct {
	driver.Ledgers
	id string
	// laterUnknown: the id's later claims land and then time out too.
	laterUnknown bool
	mu           sync.Mutex
	inFlight     *driver.ClaimRequestParams
	landed       bool
}

func (l *lateClaimStore) ClaimRequest(ctx context.Context, p *driver.ClaimRequestParams) (driver.ClaimResult, error) {
	l.mu.Lock()
	first := p.RequestID == l.id && l.inFlight == nil
	if first {
		cp := *p
		l.inFlight = &cp
	}
	l.mu.Unlock()
	if first {
		return driver.ClaimResult{}, fmt.Errorf("injected timeout, still in flight: %w", driver.ErrUnknownOutcome)
	}
	res, err := l.Ledgers.ClaimRequest(ctx, p)
	if err == nil && p.RequestID == l.id && l.laterUnknown {
		return driver.ClaimResult{}, fmt.Errorf("injected timeout after the claim landed: %w", driver.ErrUnknownOutcome)
	}
	return res, err
}

func (l *lateClaimStore) ReleaseClaim(ctx context.Context, p *driver.ReleaseClaimParams) (bool, error) {
	removed, err := l.Ledgers.ReleaseClaim(ctx, p)
	l.mu.Lock()
	land := p.RequestID == l.id && !l.landed && l.inFlight != nil
	l.landed = l.landed || land
	l.mu.Unlock()
	if land {
		if _, err := l.Ledgers.ClaimRequest(ctx, l.inFlight); err != nil {
			return removed, err
		}
	}
	return removed, err
}

// A claim won on a resubmission may be stored again by the attempt that
// timed out, after the claim is withdrawn. Such a claim, after a gap in
// its batch, must not be withdrawn and claimed again as if it were gone:
// the actor retires, so it never reaches the number the claim names, and
// the late claim is withdrawn in the background. The request is then
// applied once, never answered "already applied" while it is not.
func TestAClaimThatMayLandLateIsNotClaimedAgain(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		ls := &lateClaimStore{Ledgers: h.store, id: "r"}
		e := h.engine(func(c *Config) {
			c.Store = ls
			c.WriteTimeout = 5 * time.Second // the store's release runs two Paxos rounds in it
			c.ClaimWait = 100 * time.Millisecond
		})
		tg := h.target("late-claim", Options{Mode: ModeExact})
		claimElsewhere(t, h, tg, "l1")
		outs := e.UpdateBatch(ctxT(t), tg, []Change{{1, "l1"}, {100, "r"}})
		if o := outs[1]; o.Err == nil {
			t.Fatalf("r: %+v; want an error (it was not written)", o)
		}
		mustUpdate(t, e, tg, 1, "x")
		mustUpdate(t, e, tg, 1, "y")
		deadline := time.Now().Add(10 * time.Second)
		for {
			r, err := e.Update(ctxT(t), tg, 100, "r")
			if err == nil {
				if !r.Applied {
					t.Fatal("r answered as already applied, but no actor wrote it")
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("retry of r: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		wantValue(t, e, tg, 102)
	})
}

// A lone request whose claim attempts all time out, one still in flight:
// the withdrawal removes the claim one attempt stored, and the attempt in
// flight stores it again afterwards. It is withdrawn again in the
// background, so a retry is applied soon, not answered "unknown" for as
// long as the claim would live.
func TestAClaimStoredAgainAfterItsWithdrawalIsWithdrawnAgain(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		ls := &lateClaimStore{Ledgers: h.store, id: "r", laterUnknown: true}
		e := h.engine(func(c *Config) {
			c.Store = ls
			c.WriteTimeout = 5 * time.Second // the store's release runs two Paxos rounds in it
			c.ClaimWait = 100 * time.Millisecond
		})
		tg := h.target("stored-again", Options{Mode: ModeExact, RetryCount: 1})
		if _, err := e.Update(ctxT(t), tg, 7, "r"); !errors.Is(err, ErrNotApplied) {
			t.Fatalf("r: %v, want ErrNotApplied (its claim was withdrawn)", err)
		}
		ls.mu.Lock()
		landed := ls.landed
		ls.mu.Unlock()
		if !landed {
			t.Fatal("the attempt in flight never stored the claim again; the test proves nothing")
		}
		other := h.engine(func(c *Config) { c.ClaimWait = 100 * time.Millisecond })
		deadline := time.Now().Add(10 * time.Second)
		for {
			r, err := other.Update(ctxT(t), tg, 7, "r")
			if err == nil && r.Applied {
				break
			}
			if err == nil || !isUnknown(err) || time.Now().After(deadline) {
				t.Fatalf("retry of r: %+v, %v; want it applied once the late claim is withdrawn", r, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		wantValue(t, e, tg, 7)
	})
}

// A won claim after a gap whose withdrawal fails (here: once, of unknown
// outcome) answers its request "not applied" and retires the actor, which
// must never write up to the number the claim names. The claim goes on a
// second try, so a retry of the request is applied, once.
func TestAFailedWithdrawalAfterAGapAnswersNotApplied(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		fs := &faultyStore{Ledgers: h.store}
		e := h.engine(func(c *Config) { c.Store = fs; c.ClaimWait = 100 * time.Millisecond })
		tg := h.target("withdraw-fails", Options{Mode: ModeExact})
		claimElsewhere(t, h, tg, "l1")
		fs.mu.Lock()
		fs.releaseErrs = 1
		fs.mu.Unlock()
		outs := e.UpdateBatch(ctxT(t), tg, []Change{{1, "l1"}, {10, "r"}})
		if o := outs[1]; !errors.Is(o.Err, ErrNotApplied) || errors.Is(o.Err, ErrUnknownOutcome) {
			t.Fatalf("r, claimed after a lost claim, its withdrawal failed: %+v, want ErrNotApplied only", o)
		}
		fs.mu.Lock()
		left := fs.releaseErrs
		fs.mu.Unlock()
		if left != 0 {
			t.Fatal("no withdrawal was tried; the test proves nothing")
		}
		if n := e.Stats().Retired.Load(); n != 1 {
			t.Fatalf("retired %d actors, want 1", n)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			r, err := e.Update(ctxT(t), tg, 10, "r")
			if err == nil {
				if !r.Applied {
					t.Fatal("the retry of r answered as applied before, but nothing wrote r")
				}
				break
			}
			if !retryable(err) || time.Now().After(deadline) {
				t.Fatalf("retry of r: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		wantValue(t, e, tg, 10)
	})
}

// A batch that panics after it withdrew claims to claim them again
// answers each request once: none is both answered and requeued.
func TestAPanicAfterAGapAnswersEachRequestOnce(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		ps := &panickyStore{Ledgers: h.store}
		e := h.engine(func(c *Config) { c.Store = ps; c.ClaimWait = 100 * time.Millisecond })
		tg := h.target("panic-gap", Options{Mode: ModeExact})
		claimElsewhere(t, h, tg, "l1")
		ps.panics.Store(true)
		outs := e.UpdateBatch(ctxT(t), tg, []Change{{1, "c1"}, {1, "l1"}, {1, "c2"}})
		ps.panics.Store(false)
		for i, o := range outs {
			if o.Err == nil {
				t.Fatalf("change %d: %+v, want an error", i, o)
			}
		}
		if n := e.Stats().Retired.Load(); n != 1 {
			t.Fatalf("retired %d actors, want 1 (a second means a request was answered twice)", n)
		}
		if st := mustRead(t, e, tg); st.Has("c2") {
			t.Fatal("c2 was written after its caller was answered")
		}
	})
}

// Close waits for a batch under way before it stops the background work
// that would settle the batch's failed write.
func TestCloseWaitsForABatchUnderWay(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		fs := &faultyStore{Ledgers: h.store}
		e := h.engine(func(c *Config) { c.Store = fs })
		tg := h.target("close", Options{})
		arrived, release := gateFirstWrite(fs)
		defer release()
		done := make(chan error, 1)
		go func() { _, err := e.Update(ctxT(t), tg, 1, "r"); done <- err }()
		<-arrived
		closed := make(chan error, 1)
		go func() { closed <- e.Close(ctxT(t)) }()
		select {
		case err := <-closed:
			t.Fatalf("Close returned (%v) while a batch was writing", err)
		case <-time.After(100 * time.Millisecond):
		}
		release()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
	})
}

// A loser that saw another actor's claim must not take that actor's entry
// at the claimed number for its request once the claim is withdrawn: a
// batch withdraws the won claims after a gap and numbers those requests
// anew, so the number may go to another request, and the withdrawn one may
// never be written (its caller gave up). Found while tracing a failure of the
// fault suite's client timeouts: such a retry could be acknowledged as
// applied while its credit was missing from the ledger.
func TestAWithdrawnClaimDoesNotVouchForItsEntry(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		a := h.engine()
		b := h.engine(func(c *Config) { c.ClaimWait = 300 * time.Millisecond })
		tg := h.target("withdrawn-claim", Options{Mode: ModeExact})
		var actor string
		for _, id := range []string{"a1", "a2", "a3"} {
			actor = mustUpdate(t, a, tg, 1, id).Actor
		}
		// b saw y claimed by a at entry 2 before the claim was withdrawn;
		// a's entries 1–3 belong to a1–a3.
		seen := driver.Claim{Actor: actor, Seq: 2, Amount: 1}
		r, err := b.lostClaim(ctxT(t), tg, "y", 1, seen)
		if !errors.Is(err, ErrUnknownOutcome) {
			t.Fatalf("claim withdrawn: %+v, %v; want ErrUnknownOutcome (y was never written)", r, err)
		}
		// Claimed again, at an entry a has not reached: still unknown.
		moved := driver.Claim{Actor: actor, Seq: 5, Amount: 1}
		if _, err := h.store.ClaimRequest(ctxT(t), &driver.ClaimRequestParams{
			Namespace: tg.Namespace, Ledger: tg.Ledger, RequestID: "y", Claim: moved,
			TTL: tg.Options.ClaimTTL, Now: driver.Micros(h.clk.Now()),
		}); err != nil {
			t.Fatal(err)
		}
		r, err = b.lostClaim(ctxT(t), tg, "y", 1, seen)
		if !errors.Is(err, ErrUnknownOutcome) {
			t.Fatalf("claim moved to entry 5: %+v, %v; want ErrUnknownOutcome", r, err)
		}
		// The claim that still names an entry written and folded away
		// does vouch for it: a3's entry, after enough credits to fold it.
		for i := range tg.Options.HistoryLength + 1 {
			mustUpdate(t, a, tg, 1, fmt.Sprint("later-", i))
		}
		if st := mustRead(t, b, tg); st.Has("a3") {
			t.Fatal("a3 is still in the history; the test needs it folded")
		}
		r, err = b.lostClaim(ctxT(t), tg, "a3", 1, driver.Claim{Actor: actor, Seq: 3, Amount: 1})
		if err != nil || r.Applied {
			t.Fatalf("a3, folded out, its claim standing: %+v, %v; want recognised as applied", r, err)
		}
	})
}

// A caller that gives up withdraws its request while it waits in a queue
// or in a batch that has not committed it, and only then.
func TestWithdrawOnlyBeforeTheCommit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		state    int32
		finished bool
		want     bool
	}{
		{queued, false, true}, {taken, false, true},
		{committing, false, false}, {handedOff, false, false}, {withdrawn, false, false},
		{taken, true, false}, // answered meanwhile: the answer stands
	} {
		r := &request{done: make(chan struct{}), stats: &Stats{}}
		r.state.Store(c.state)
		if c.finished {
			r.finish(Result{Applied: true}, nil)
		}
		if got := withdraw(r); got != c.want {
			t.Errorf("withdraw in state %d (finished %v) = %v, want %v", c.state, c.finished, got, c.want)
		}
		if c.want && r.state.Load() != withdrawn {
			t.Errorf("state %d: withdrawn, but the state is now %d", c.state, r.state.Load())
		}
	}
}
