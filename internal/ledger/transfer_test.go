package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

func mustTransfer(t *testing.T, e *Engine, from, to Target, amount int64, id string) Result {
	t.Helper()
	r, err := e.Transfer(ctxT(t), from, to, amount, id)
	if err != nil {
		t.Fatalf("Transfer(%s -> %s, %d, %q): %v", from.Ledger, to.Ledger, amount, id, err)
	}
	return r
}

// A transfer debits one ledger and credits the other under one request
// id; a retry, from this process or another, applies nothing more, and
// the id is a request id of both ledgers.
func TestTransferMovesAnAmountOnce(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		for _, mode := range []Mode{ModeExact, ModeConcurrentRetriesMayDouble} {
			t.Run(string(mode), func(t *testing.T) {
				o := Options{Mode: mode}
				a, b := h.target("a-"+string(mode), o), h.target("b-"+string(mode), o)
				e := h.engine()
				mustUpdate(t, e, a, 100, "c1")
				if r := mustTransfer(t, e, a, b, 30, "t1"); !r.Applied {
					t.Fatal("the first transfer was not applied")
				}
				for _, retry := range []*Engine{e, h.engine()} {
					if r := mustTransfer(t, retry, a, b, 30, "t1"); r.Applied {
						t.Fatal("a retried transfer was applied again")
					}
				}
				wantValue(t, e, a, 70)
				wantValue(t, e, b, 30)
				wantKnown(t, mustRead(t, e, a), map[string]bool{"t1": true})
				wantKnown(t, mustRead(t, e, b), map[string]bool{"t1": true})
				if _, err := e.Transfer(ctxT(t), a, b, 31, "t1"); !errors.Is(err, ErrRequestConflict) {
					t.Fatalf("t1 again with another amount: %v, want ErrRequestConflict", err)
				}
			})
		}
	})
}

// What Transfer refuses before reading anything.
func TestTransferRefusesBadRequests(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	e := &Engine{}
	a, b := h.target("a", Options{}), h.target("b", Options{})
	other := b
	other.Namespace += "-other"
	for name, c := range map[string]struct {
		from, to Target
		amount   int64
		id       string
	}{
		"the same ledger":   {a, a, 1, "r"},
		"two namespaces":    {a, other, 1, "r"},
		"a zero amount":     {a, b, 0, "r"},
		"a negative amount": {a, b, -5, "r"},
		"no request id":     {a, b, 1, ""},
	} {
		if _, err := e.Transfer(ctxT(t), c.from, c.to, c.amount, c.id); !errors.Is(err, ErrInvalidEntry) {
			t.Errorf("a transfer with %s: %v, want ErrInvalidEntry", name, err)
		}
	}
}

// A floored source refuses a transfer that would take it below its floor,
// and nothing is written to either ledger; once the balance covers it the
// same id applies.
func TestTransferRespectsTheSourcesFloor(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		o := floored(0)
		a, b := h.target("wallet-a", o), h.target("wallet-b", o)
		e := h.engine()
		mustUpdate(t, e, a, 10, "c1")
		if _, err := e.Transfer(ctxT(t), a, b, 11, "t1"); !errors.Is(err, ErrBelowFloor) || !errors.Is(err, ErrNotApplied) {
			t.Fatalf("a transfer of 11 from 10: %v, want ErrBelowFloor", err)
		}
		wantValue(t, e, a, 10)
		if st := mustRead(t, e, b); st.Len() != 0 {
			t.Fatalf("the destination after a refused transfer holds %d actor rows, want none", st.Len())
		}
		mustUpdate(t, e, a, 1, "c2")
		if r := mustTransfer(t, e, a, b, 11, "t1"); !r.Applied {
			t.Fatal("the refused id was not applied once the balance covered it")
		}
		wantValue(t, e, a, 0)
		wantValue(t, e, b, 11)
		if err := e.Close(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		wantRecordSettled(t, h.engine(), a)
	})
}

// A write of both rows whose outcome is unknown answers unknown; the rows
// land together or not at all, and a retry (after the background
// resubmission in exact mode) finds the transfer applied once. A write
// the store refused is not applied, and a retry applies it.
func TestTransferFailuresLeaveBothLedgersOrNeither(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		for _, c := range []struct {
			fl      fault
			floored bool
		}{{landThenUnknown, false}, {unknownNoLand, false}, {unavailable, false}, {landThenUnknown, true}, {unavailable, true}} {
			fl := c.fl
			name := fl.String()
			if c.floored {
				name += "-floored"
			}
			t.Run(name, func(t *testing.T) {
				fs := &faultyStore{Ledgers: h.store}
				o := Options{Mode: ModeExact, RetryCount: -1}
				if c.floored {
					o = floored(0)
					o.RetryCount = -1
				}
				a, b := h.target("fa-"+name, o), h.target("fb-"+name, o)
				e := h.engine(func(c *Config) { c.Store = fs })
				mustUpdate(t, e, a, 50, "c1")
				first := true
				fs.setRowsFault(func([]driver.WriteLedgerRowParams) fault {
					if first {
						first = false
						return fl
					}
					return pass
				})
				_, err := e.Transfer(ctxT(t), a, b, 20, "t1")
				switch fl {
				case unavailable:
					if !errors.Is(err, ErrNotApplied) {
						t.Fatalf("a refused write: %v, want ErrNotApplied", err)
					}
					wantValue(t, e, a, 50)
					wantValue(t, e, b, 0)
				default:
					if !isUnknown(err) {
						t.Fatalf("%s: %v, want ErrUnknownOutcome", fl, err)
					}
				}
				// Both rows or neither, whenever one is looked at. The
				// write may still be landing in the background, so a is
				// read around b: if both reads of a agree, nothing landed
				// in between, and b was read in the same state.
				var va, vb int64
				for {
					va, _ = mustRead(t, e, a).Value()
					vb, _ = mustRead(t, e, b).Value()
					if again, _ := mustRead(t, e, a).Value(); again == va {
						break
					}
				}
				if va+vb != 50 || (va != 50 && va != 30) {
					t.Fatalf("after %s: a %d, b %d; want 50 and 0 or 30 and 20", fl, va, vb)
				}
				other := h.engine(func(c *Config) { c.ClaimWait = 200 * time.Millisecond })
				deadline := time.Now().Add(30 * time.Second)
				for {
					_, err := other.Transfer(ctxT(t), a, b, 20, "t1")
					if err == nil {
						break
					}
					// rights_held: the retired actor's rights are on their
					// way back.
					if !isUnknown(err) && !errors.Is(err, ErrRightsHeld) || time.Now().After(deadline) {
						t.Fatalf("a retry of t1 after %s: %v", fl, err)
					}
					time.Sleep(50 * time.Millisecond)
				}
				wantValue(t, e, a, 30)
				wantValue(t, e, b, 20)
				if c.floored {
					// The rights account for the debit once: counted when
					// its write may have landed, not when it surely did not.
					for _, closing := range []*Engine{e, other} {
						if err := closing.Close(ctxT(t)); err != nil {
							t.Fatal(err)
						}
					}
					wantRecordSettled(t, h.engine(), a)
					wantRecordSettled(t, h.engine(), b)
				}
			})
		}
	})
}

// A copy of a transfer whose id another process claimed waits for that
// process's write with this process's actors let go: other requests of
// both ledgers go on meanwhile, and a caller that gives up is told the
// outcome is unknown.
func TestATransferWaitingOnAClaimHoldsNoActor(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		fs := &faultyStore{Ledgers: h.store}
		fs.setRowsFault(func([]driver.WriteLedgerRowParams) fault { return unknownNoLand }) // the claimant's write never lands
		o := Options{Mode: ModeExact, RetryCount: -1}
		a, b := h.target("wait-a", o), h.target("wait-b", o)
		claimant := h.engine(func(c *Config) { c.Store = fs })
		waiter := h.engine(func(c *Config) { c.ClaimWait = time.Minute })
		mustUpdate(t, waiter, a, 50, "c1")
		if _, err := claimant.Transfer(ctxT(t), a, b, 20, "t1"); !isUnknown(err) {
			t.Fatalf("the claimant's transfer, whose write never lands: %v, want ErrUnknownOutcome", err)
		}
		ctx, cancel := context.WithCancel(ctxT(t))
		defer cancel()
		answer := make(chan error, 1)
		go func() {
			_, err := waiter.Transfer(ctx, a, b, 20, "t1")
			answer <- err
		}()
		for deadline := time.Now().Add(10 * time.Second); waiter.Stats().ClaimsLost.Load() == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the second copy never found the claim")
			}
		}
		mustUpdate(t, waiter, a, 1, "c2")
		mustUpdate(t, waiter, b, 1, "c3")
		select {
		case err := <-answer:
			t.Fatalf("the waiting copy answered (%v) before its caller gave up: the test waited on nothing", err)
		default:
		}
		cancel()
		if err := <-answer; !isUnknown(err) {
			t.Fatalf("a copy whose caller gave up while another process held the claim: %v, want ErrUnknownOutcome", err)
		}
	})
}

// Copies of one transfer racing on several processes apply it once, and
// transfers in both directions between two ledgers never deadlock; each
// ledger ends where the transfers, each applied once, put it.
//
// A copy may be answered "not applied" as well as "unknown": in a group
// of transfers, a claim lost to another process leaves a gap in the
// numbers, the won claims after it are withdrawn, and a withdrawal that
// times out under the contention of three processes on one partition
// answers its request not applied (see claimBatch). Both answers mean a
// retry with the same id is the way on, so the test retries both, and the
// ledgers' values show whether any copy was applied twice.
func TestTransfersRaceAndCross(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		o := Options{Mode: ModeExact}
		a, b := h.target("ra", o), h.target("rb", o)
		engines := []*Engine{h.engine(), h.engine(), h.engine()}
		mustUpdate(t, engines[0], a, 1000, "c1")
		mustUpdate(t, engines[0], b, 1000, "c2")
		const n = 12
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			applied = map[string]int{}
			errs    []error
		)
		for i := range n {
			for _, e := range engines {
				from, to := a, b
				if i%2 == 1 {
					from, to = b, a
				}
				id := fmt.Sprint("t", i)
				wg.Go(func() {
					r, err := e.Transfer(ctxT(t), from, to, int64(i+1), id)
					mu.Lock()
					defer mu.Unlock()
					if err != nil && !retryable(err) {
						errs = append(errs, fmt.Errorf("%s: %w", id, err))
					}
					if err == nil && r.Applied {
						applied[id]++
					}
				})
			}
		}
		wg.Wait()
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		for id, c := range applied {
			if c > 1 {
				t.Fatalf("%s applied by %d processes", id, c)
			}
		}
		// Settle the unknown and unapplied ones with a retry, then check each
		// ledger.
		for i := range n {
			from, to := a, b
			if i%2 == 1 {
				from, to = b, a
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				_, err := engines[0].Transfer(ctxT(t), from, to, int64(i+1), fmt.Sprint("t", i))
				if err == nil {
					break
				}
				if !retryable(err) || time.Now().After(deadline) {
					t.Fatalf("settling t%d: %v", i, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		// a sent 1+3+...+11 = 36 and got 2+4+...+12 = 42.
		wantValue(t, engines[0], a, 1006)
		wantValue(t, engines[0], b, 994)
	})
}

// groupGate holds the first write of several rows until it is opened, so
// that transfers queue behind it, and records how many rows each write of
// several rows carried.
type groupGate struct {
	mu      sync.Mutex
	open    chan struct{}
	blocked chan struct{} // closed once the first write waits
	rows    []int
}

func newGroupGate(fs *faultyStore) *groupGate {
	g := &groupGate{open: make(chan struct{}), blocked: make(chan struct{})}
	fs.mu.Lock()
	fs.rowsGate = func(ws []driver.WriteLedgerRowParams) <-chan struct{} {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.rows = append(g.rows, len(ws))
		if len(g.rows) == 1 {
			close(g.blocked)
			return g.open
		}
		return nil
	}
	fs.mu.Unlock()
	return g
}

func (g *groupGate) writes() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.rows)
}

// startHeld starts a transfer whose write the gate holds, and returns its
// answer once the gate lets it go.
func startHeld(t *testing.T, e *Engine, gate *groupGate, from, to Target, amount int64, id string) <-chan error {
	t.Helper()
	answer := make(chan error, 1)
	go func() {
		_, err := e.Transfer(ctxT(t), from, to, amount, id)
		answer <- err
	}()
	<-gate.blocked
	return answer
}

// waitInbound waits until n transfers wait in the queue into ledger to.
func waitInbound(t *testing.T, e *Engine, to Target, n int) {
	t.Helper()
	k := slotKey{to.Namespace, to.Ledger}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		e.inbound.Lock()
		q := e.inbound.m[k]
		queued := 0
		if q != nil {
			queued = len(q.queue)
		}
		e.inbound.Unlock()
		if queued == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d transfers queued into %s, want %d", queued, to.Ledger, n)
		}
	}
}

// Transfers into one ledger that queue while another is being written
// share the next write: one write of every source's row and the
// destination's. Inside that group each transfer keeps its own answer: a
// replay, a debit refused at its floor, a copy whose id another process
// claimed and a caller that gave up hold back none of the others.
func TestTransfersIntoOneLedgerShareAWrite(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		fs := &faultyStore{Ledgers: h.store}
		o := floored(0)
		dst := h.target("g-dst", o)
		src := make([]Target, 8)
		e := h.engine(func(c *Config) { c.Store = fs; c.ClaimWait = 200 * time.Millisecond })
		for i := range src {
			src[i] = h.target(fmt.Sprint("g-src", i), o)
			mustUpdate(t, e, src[i], 100, fmt.Sprint("fund", i))
		}
		mustTransfer(t, e, src[3], dst, 10, "replayed") // applied before: its copy in the group is a replay

		// Another process claims "claimed" and never writes it.
		lost := &faultyStore{Ledgers: h.store}
		lost.setRowsFault(func([]driver.WriteLedgerRowParams) fault { return unknownNoLand })
		claimant := h.engine(func(c *Config) { c.Store = lost })
		if _, err := claimant.Transfer(ctxT(t), src[4], dst, 10, "claimed"); !isUnknown(err) {
			t.Fatalf("the claimant's transfer, whose write never lands: %v, want ErrUnknownOutcome", err)
		}

		gate := newGroupGate(fs)
		type answer struct {
			res Result
			err error
		}
		answers := make([]chan answer, len(src))
		transfer := func(ctx context.Context, i int, amount int64, id string) {
			answers[i] = make(chan answer, 1)
			go func() {
				r, err := e.Transfer(ctx, src[i], dst, amount, id)
				answers[i] <- answer{r, err}
			}()
		}
		transfer(ctxT(t), 0, 10, "first")
		<-gate.blocked
		giveUp, cancel := context.WithCancel(ctxT(t))
		transfer(ctxT(t), 1, 10, "t1")
		transfer(ctxT(t), 2, 500, "too-much") // below the floor of 0
		transfer(ctxT(t), 3, 10, "replayed")
		transfer(ctxT(t), 4, 10, "claimed")
		transfer(ctxT(t), 5, 10, "t5")
		transfer(giveUp, 6, 10, "t6")
		transfer(ctxT(t), 7, 10, "t7")
		waitInbound(t, e, dst, 7)
		cancel() // t6's caller gives up while it is queued
		if a := <-answers[6]; !errors.Is(a.err, ErrNotApplied) {
			t.Fatalf("a transfer withdrawn while queued: %+v, want ErrNotApplied", a)
		}
		close(gate.open)

		for i, want := range map[int]string{0: "applied", 1: "applied", 5: "applied", 7: "applied", 3: "replay", 2: "floor", 4: "unknown"} {
			a := <-answers[i]
			var ok bool
			switch want {
			case "applied":
				ok = a.err == nil && a.res.Applied
			case "replay":
				ok = a.err == nil && !a.res.Applied
			case "floor":
				ok = errors.Is(a.err, ErrBelowFloor)
			case "unknown":
				ok = isUnknown(a.err)
			}
			if !ok {
				t.Errorf("transfer from %s: %+v, %v; want %s", src[i].Ledger, a.res, a.err, want)
			}
		}
		// The first transfer's write, then one write of t1, t5 and t7's
		// sources and the destination.
		if w := gate.writes(); !slices.Equal(w, []int{2, 4}) {
			t.Fatalf("rows per write: %v, want [2 4]", w)
		}
		for i, want := range []int64{90, 90, 100, 90, 100, 90, 100, 90} {
			wantValue(t, e, src[i], want)
		}
		wantValue(t, e, dst, 50)
	})
}

// A panic before a group commits its transfers (here: while the source's
// actor takes rights to debit against its floor) answers them "not
// applied" and retires the actors it held; a retry applies the transfer
// at once, since nothing was claimed.
func TestAPanicBeforeAGroupCommitsAnswersNotApplied(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		ps := &panickyStore{Ledgers: h.store}
		o := floored(0)
		a, b := h.target("pr-a", o), h.target("pr-b", o)
		e := h.engine(func(c *Config) { c.Store = ps })
		mustUpdate(t, e, a, 50, "c1")
		retiredBefore := e.Stats().Retired.Load()
		ps.rightsPanics.Store(true)
		if _, err := e.Transfer(ctxT(t), a, b, 20, "t1"); !errors.Is(err, ErrNotApplied) || errors.Is(err, ErrUnknownOutcome) {
			t.Fatalf("a transfer whose group panicked before committing it: %v, want ErrNotApplied only", err)
		}
		if got := e.Stats().Retired.Load() - retiredBefore; got != 2 {
			t.Fatalf("retired %d actors, want both ledgers' (2)", got)
		}
		ps.rightsPanics.Store(false)
		if r, err := e.Transfer(ctxT(t), a, b, 20, "t1"); err != nil || !r.Applied {
			t.Fatalf("the retry: %+v, %v; want it applied (nothing was claimed)", r, err)
		}
		wantValue(t, e, a, 30)
		wantValue(t, e, b, 20)
	})
}

// A panic while applying a group answers every transfer of it "unknown"
// and retires every actor it held; the process goes on. (This mode has
// no claims, so the transfers can be applied again at once.)
func TestAPanickingGroupOfTransfersAnswersUnknown(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		ps := &panickyStore{Ledgers: h.store}
		fs := &faultyStore{Ledgers: ps}
		o := Options{Mode: ModeConcurrentRetriesMayDouble}
		dst, a, b, c := h.target("p-dst", o), h.target("p-a", o), h.target("p-b", o), h.target("p-c", o)
		e := h.engine(func(c *Config) { c.Store = fs })
		for _, tg := range []Target{a, b, c} {
			mustUpdate(t, e, tg, 100, "fund-"+tg.Ledger)
		}
		mustTransfer(t, e, c, dst, 1, "done")
		gate := newGroupGate(fs)
		first := startHeld(t, e, gate, a, dst, 1, "first")
		ps.panics.Store(true) // the first write panics too, once let go
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, from := range []Target{b, c} {
			wg.Go(func() { _, errs[i] = e.Transfer(ctxT(t), from, dst, 1, "t-"+from.Ledger) })
		}
		// A retry in the group, answered before the write panics, keeps
		// its answer.
		var replay Result
		var replayErr error
		wg.Go(func() { replay, replayErr = e.Transfer(ctxT(t), c, dst, 1, "done") })
		waitInbound(t, e, dst, 3)
		retiredBefore := e.Stats().Retired.Load()
		close(gate.open)
		wg.Wait()
		if err := <-first; !isUnknown(err) {
			t.Fatalf("the first transfer: %v, want ErrUnknownOutcome", err)
		}
		for i, err := range errs {
			if !isUnknown(err) {
				t.Fatalf("transfer %d of the group: %v, want ErrUnknownOutcome", i, err)
			}
		}
		if replayErr != nil || replay.Applied {
			t.Fatalf("the retry of a transfer in the group: %+v, %v; want its replay", replay, replayErr)
		}
		// The first group held a's and dst's actors; the second b's, c's
		// and dst's next one.
		if got := e.Stats().Retired.Load() - retiredBefore; got != 5 {
			t.Fatalf("retired %d actors, want 5", got)
		}
		ps.panics.Store(false)
		mustTransfer(t, e, b, dst, 1, "t-p-b")
		mustTransfer(t, e, c, dst, 1, "t-p-c")
		wantValue(t, e, b, 99)
		wantValue(t, e, c, 98)
		wantValue(t, e, dst, 3)
	})
}

// Transfers between one pair of ledgers that queue while another is being
// written share the next write: the source's debits are one batch of its
// actor, so its floor refuses only the debits it cannot cover.
func TestTransfersOfOnePairShareAWrite(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		fs := &faultyStore{Ledgers: h.store}
		o := floored(0)
		a, b := h.target("pair-a", o), h.target("pair-b", o)
		e := h.engine(func(c *Config) { c.Store = fs })
		mustUpdate(t, e, a, 100, "fund")
		gate := newGroupGate(fs)
		first := startHeld(t, e, gate, a, b, 10, "first")
		errs := make([]chan error, 4)
		for i := range errs {
			errs[i] = make(chan error, 1)
			go func() {
				_, err := e.Transfer(ctxT(t), a, b, 30, fmt.Sprint("t", i))
				errs[i] <- err
			}()
			waitInbound(t, e, b, i+1) // in order, so that the last is the one refused
		}
		close(gate.open)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		for i, ch := range errs {
			err := <-ch
			if i < 3 && err != nil || i == 3 && !errors.Is(err, ErrBelowFloor) {
				t.Fatalf("transfer %d of 30 from a balance of 90: %v", i, err)
			}
		}
		if w := gate.writes(); !slices.Equal(w, []int{2, 2}) {
			t.Fatalf("rows per write: %v, want [2 2] (the first transfer, then the other three together)", w)
		}
		wantValue(t, e, a, 0)
		wantValue(t, e, b, 100)
	})
}

// A group debits at most as many ledgers as fit one write with the
// destination's row; the transfers from more sources go in the next.
func TestAGroupOfTransfersFitsOneWrite(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		fs := &faultyStore{Ledgers: h.store}
		o := Options{}
		dst := h.target("fit-dst", o)
		e := h.engine(func(c *Config) { c.Store = fs })
		src := make([]Target, maxGroupSources+6)
		for i := range src {
			src[i] = h.target(fmt.Sprint("fit-src", i), o)
			mustUpdate(t, e, src[i], 10, "fund")
		}
		gate := newGroupGate(fs)
		var wg sync.WaitGroup
		errs := make([]error, len(src))
		wg.Go(func() { _, errs[0] = e.Transfer(ctxT(t), src[0], dst, 1, "t0") })
		<-gate.blocked
		for i := 1; i < len(src); i++ {
			wg.Go(func() { _, errs[i] = e.Transfer(ctxT(t), src[i], dst, 1, fmt.Sprint("t", i)) })
		}
		waitInbound(t, e, dst, len(src)-1)
		close(gate.open)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("transfer %d: %v", i, err)
			}
		}
		want := []int{2, driver.MaxLedgerRowWrites, len(src) - 1 - maxGroupSources + 1}
		if w := gate.writes(); !slices.Equal(w, want) {
			t.Fatalf("rows per write: %v, want %v", w, want)
		}
		wantValue(t, e, dst, int64(len(src)))
	})
}

// A group whose rows would pass its size bound sets the transfers beyond
// it aside for the next group; one whose caller gives up meanwhile stays
// not applied, as its caller was told.
func TestAGroupSetsAsideWhatDoesNotFit(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		fs := &faultyStore{Ledgers: h.store}
		o := Options{HistoryLength: 150}
		dst := h.target("fit-big", o)
		src := []Target{h.target("fit-big0", o), h.target("fit-big1", o), h.target("fit-big2", o), h.target("fit-big3", o)}
		e := h.engine(func(c *Config) { c.Store = fs })
		// The destination's row holds 150 ids of 230 bytes: more than
		// the bound by itself, less than a Cassandra batch.
		var changes []Change
		for i := range 150 {
			changes = append(changes, Change{Amount: 1, RequestID: fmt.Sprintf("%0230d", i)})
		}
		for _, out := range e.UpdateBatch(ctxT(t), dst, changes) {
			if out.Err != nil {
				t.Fatal(out.Err)
			}
		}
		st := mustRead(t, e, dst)
		if n := len(EncodeActor(st.Actor(st.Actors()[0]))); n <= maxGroupBytes {
			t.Fatalf("the destination's row is %d bytes, not above the bound", n)
		}
		var mu sync.Mutex
		var rows []int
		gates := []chan struct{}{make(chan struct{}), make(chan struct{})}
		held := []chan struct{}{make(chan struct{}), make(chan struct{})}
		fs.mu.Lock()
		fs.rowsGate = func(ws []driver.WriteLedgerRowParams) <-chan struct{} {
			mu.Lock()
			defer mu.Unlock()
			rows = append(rows, len(ws))
			if n := len(rows); n <= 2 {
				close(held[n-1])
				return gates[n-1]
			}
			return nil
		}
		fs.mu.Unlock()

		answers := make([]chan error, len(src))
		giveUp, cancel := context.WithCancel(ctxT(t))
		for i := range src {
			ctx := ctxT(t)
			if i == 2 {
				ctx = giveUp
			}
			answers[i] = make(chan error, 1)
			go func() {
				_, err := e.Transfer(ctx, src[i], dst, 1, fmt.Sprint("t", i, strings.Repeat("x", 200)))
				answers[i] <- err
			}()
			if i == 0 {
				<-held[0]
			} else {
				waitInbound(t, e, dst, i)
			}
		}
		close(gates[0])
		<-held[1] // the group {t1, t2, t3} writes t1's rows; t2 and t3 wait aside
		cancel()
		if err := <-answers[2]; !errors.Is(err, ErrNotApplied) {
			t.Fatalf("a transfer set aside whose caller gave up: %v, want ErrNotApplied", err)
		}
		close(gates[1])
		for _, i := range []int{0, 1, 3} {
			if err := <-answers[i]; err != nil {
				t.Fatalf("transfer %d: %v", i, err)
			}
		}
		mu.Lock()
		got := slices.Clone(rows)
		mu.Unlock()
		if !slices.Equal(got, []int{2, 2, 2}) {
			t.Fatalf("rows per write: %v, want [2 2 2] (t0, t1, then t3 in a group of its own)", got)
		}
		for i, want := range []int64{-1, -1, 0, -1} {
			wantValue(t, e, src[i], want)
		}
	})
}

// A transfer whose claim another process holds is answered by that
// process's write alone, even when the rest of its group panics.
func TestALostClaimInAPanickingGroupIsAnsweredOnce(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		ps := &panickyStore{Ledgers: h.store}
		fs := &faultyStore{Ledgers: ps}
		o := Options{}
		dst, a, b, c := h.target("lp-dst", o), h.target("lp-a", o), h.target("lp-b", o), h.target("lp-c", o)
		e := h.engine(func(c *Config) { c.Store = fs; c.ClaimWait = 300 * time.Millisecond })
		lost := &faultyStore{Ledgers: h.store}
		lost.setRowsFault(func([]driver.WriteLedgerRowParams) fault { return unknownNoLand })
		claimant := h.engine(func(c *Config) { c.Store = lost })
		if _, err := claimant.Transfer(ctxT(t), b, dst, 10, "claimed"); !isUnknown(err) {
			t.Fatalf("the claimant's transfer, whose write never lands: %v, want ErrUnknownOutcome", err)
		}
		gate := newGroupGate(fs)
		first := startHeld(t, e, gate, c, dst, 1, "first")
		ps.panics.Store(true)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		wg.Go(func() { _, errs[0] = e.Transfer(ctxT(t), a, dst, 10, "ok") })
		waitInbound(t, e, dst, 1)
		wg.Go(func() { _, errs[1] = e.Transfer(ctxT(t), b, dst, 10, "claimed") })
		waitInbound(t, e, dst, 2)
		close(gate.open)
		wg.Wait()
		<-first
		if !isUnknown(errs[0]) || !strings.Contains(errs[0].Error(), "internal error") {
			t.Fatalf("the transfer the panic cut short: %v, want unknown for the panic", errs[0])
		}
		// Unknown, since the claimant never writes, but for that reason,
		// not for the panic.
		if !isUnknown(errs[1]) || strings.Contains(errs[1].Error(), "internal error") {
			t.Fatalf("the copy whose id the claimant holds: %v, want unknown for the claim", errs[1])
		}
		if n := e.Stats().ClaimsLost.Load(); n != 1 {
			t.Fatalf("%d claims lost, want 1", n)
		}
	})
}

// Groups hold the actors of several ledgers at once. Transfers among four
// ledgers in every direction, many at a time, form groups that overlap in
// every way; they all finish (no two groups wait for each other), and the
// ledgers' sum is unchanged.
func TestGroupsAcrossLedgersNeverDeadlock(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		o := Options{}
		ls := []Target{h.target("ring-a", o), h.target("ring-b", o), h.target("ring-c", o), h.target("ring-d", o)}
		e := h.engine()
		for _, l := range ls {
			mustUpdate(t, e, l, 1000, "fund")
		}
		ctx, cancel := context.WithTimeout(ctxT(t), time.Minute)
		defer cancel()
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			errs []error
		)
		for i := range 96 {
			from, to := ls[i%4], ls[(i/4+i+1)%4]
			if from == to {
				to = ls[(i+2)%4]
			}
			wg.Go(func() {
				if _, err := e.Transfer(ctx, from, to, 1, fmt.Sprint("x", i)); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(errs) > 0 {
			// A deadlock shows here, at the deadline, and then as a hang
			// of the engine's Close until go test's timeout.
			t.Fatalf("%d transfers failed, the first: %v", len(errs), errs[0])
		}
		var sum int64
		for _, l := range ls {
			v, err := mustRead(t, e, l).Value()
			if err != nil {
				t.Fatal(err)
			}
			sum += v
		}
		if sum != 4000 {
			t.Fatalf("the ledgers sum to %d, want 4000", sum)
		}
	})
}

// A group takes what fits from the front of its queue and leaves the rest
// in order, the transfers it passed over first, wherever they stood among
// the ones it took; behind a full set of sources it looks past a bounded
// number of transfers, so a deep queue from many ledgers costs each group
// a bounded scan.
func TestTakingAGroupScansABoundedPrefix(t *testing.T) {
	into := &Target{Namespace: "ns", Ledger: "dst"}
	transfer := func(source, id string) *request {
		return &request{t: Target{Namespace: "ns", Ledger: source}, into: into, id: id}
	}
	var queue, group, rest []*request
	for i := range maxGroupSources {
		r := transfer(fmt.Sprint("s", i), fmt.Sprint("first-", i))
		queue, group = append(queue, r), append(group, r)
		switch i {
		case 1: // a copy of the first: never in the group of its id
			c := transfer("s0", "first-0")
			queue, rest = append(queue, c), append(rest, c)
		case 3: // withdrawn by its caller: dropped
			w := transfer("s3", "withdrawn")
			w.state.Store(withdrawn)
			queue = append(queue, w)
		}
	}
	for i := range maxGroupSkips - 1 {
		r := transfer(fmt.Sprint("other-", i), fmt.Sprint("other-", i))
		queue, rest = append(queue, r), append(rest, r)
	}
	beyond := transfer("s1", "beyond") // fits the group, past the bound
	queue, rest = append(queue, beyond), append(rest, beyond)

	e := &Engine{}
	e.inbound.m = map[slotKey]*inboundQueue{}
	k := slotKey{"ns", "dst"}
	q := &inboundQueue{queue: slices.Clone(queue)}
	e.inbound.m[k] = q
	if got := e.takeTransfers(k, q); !slices.Equal(got, group) {
		t.Fatalf("took %d transfers, want the %d of distinct sources and ids", len(got), len(group))
	}
	for _, r := range group {
		if r.state.Load() != taken {
			t.Fatalf("%s is in the group but not taken", r.id)
		}
	}
	if !slices.Equal(q.queue, rest) {
		t.Fatalf("left %d transfers, want the %d others in their order", len(q.queue), len(rest))
	}
	if beyond.state.Load() != queued {
		t.Fatal("a group looked past more transfers than maxGroupSkips")
	}
}
