package ledger

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// Group commit.
//
// An actor does one read-merge-write at a time, so a hot ledger used to
// run at one request per round trip while its callers queued. Now callers
// queue their requests in the slot, and whoever serves the slot takes
// every queued request (up to MaxBatch) into one read-merge-write: one
// read, the claims of the batch's ids at once, one write of the actor's
// row carrying every entry. Each request is still acknowledged only after
// the write that holds it succeeded, and still recognised or refused by
// its own request id; the argument is in docs/ledger.md, "Group commit".

// MaxBatch bounds the requests one read-merge-write carries. A write's
// row holds history_length entries per section plus the batch's, so the
// bound also bounds a row's size.
const MaxBatch = 128

// Change is one request of a batch: a signed amount under a request id.
type Change struct {
	Amount    int64
	RequestID string
}

// Outcome is what became of one Change: the Result, or an error with the
// same meaning as Update's.
type Outcome struct {
	Result
	Err error
}

// Request states. A request queued, or taken by a batch that is still
// reading, may be withdrawn by its caller: it is then never claimed nor
// written. Once the batch commits it (claims or writes), only the batch
// decides its outcome.
const (
	queued int32 = iota
	taken
	committing
	withdrawn
	// handedOff: answered by a goroutine of its own, not by the batch
	// (a debit refused here whose id another actor claimed).
	handedOff
)

// request is one Update waiting for, or carried by, a batch.
type request struct {
	t      Target
	amount int64
	id     string
	state  atomic.Int32
	done   chan struct{}
	out    Outcome
	stats  *Stats

	// into is a transfer's destination; the request is the transfer's
	// debit of its source, t (transfer.go).
	into *Target

	// Set by the batch that carries it:
	neg   bool  // a debit
	abs   int64 // |amount|
	claim claimOutcome
}

// finish records the request's outcome. What the process added to a
// ledger is counted here, even when the caller has stopped waiting.
func (r *request) finish(res Result, err error) {
	r.out = Outcome{Result: res, Err: err}
	switch {
	case err == nil && res.Applied:
		r.stats.Applied.Add(1)
	case err == nil:
		r.stats.Duplicates.Add(1)
	}
	close(r.done)
}

// finished reports whether the request has its outcome.
func (r *request) finished() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// Update applies a signed amount (positive: a credit, negative: a debit)
// under a request id, once. It reads the ledger; if any actor's history
// holds the request id it returns Applied false and writes nothing;
// otherwise it appends the request to this process's actor and writes that
// actor's row (claiming the id first in exact mode). Requests for one
// ledger that arrive while a write is under way share the next write.
func (e *Engine) Update(ctx context.Context, t Target, amount int64, requestID string) (Result, error) {
	out := e.UpdateBatch(ctx, t, []Change{{Amount: amount, RequestID: requestID}})
	return out[0].Result, out[0].Err
}

// UpdateBatch applies every change to one ledger, each once under its own
// request id, and returns their outcomes in order. The changes are
// queued together, so they share read-merge-writes (one per MaxBatch
// changes unless other callers' requests come between them); each outcome
// means what Update's would. A request id that appears twice is carried
// by two writes, one after the other, so the second answers Applied false
// (or ErrRequestConflict for another amount).
func (e *Engine) UpdateBatch(ctx context.Context, t Target, changes []Change) []Outcome {
	outs := make([]Outcome, len(changes))
	t.Options = t.Options.WithDefaults()
	optErr := t.Options.Validate()
	reqs := make([]*request, 0, len(changes))
	index := make([]int, 0, len(changes))
	for i, c := range changes {
		if err := checkChange(c, optErr); err != nil {
			outs[i].Err = err
			continue
		}
		reqs = append(reqs, &request{t: t, amount: c.Amount, id: c.RequestID, done: make(chan struct{}), stats: &e.stats})
		index = append(index, i)
	}
	if len(reqs) == 0 {
		return outs
	}
	e.submit(reqs)
	for j, r := range reqs {
		outs[index[j]] = e.wait(ctx, r)
	}
	return outs
}

func checkChange(c Change, optErr error) error {
	if optErr != nil {
		return optErr
	}
	if err := ValidateRequestID(c.RequestID); err != nil {
		return err
	}
	switch {
	case c.Amount == 0:
		return fmt.Errorf("%w: amount is zero", ErrInvalidEntry)
	case c.Amount == math.MinInt64:
		return fmt.Errorf("%w: amount %d has no positive counterpart in int64", ErrOverflow, c.Amount)
	}
	return nil
}

// wait returns the request's outcome. A caller that gives up before a
// batch commits its request withdraws it (not applied); after that, the
// outcome is not known to the caller, who may retry with the same id.
func (e *Engine) wait(ctx context.Context, r *request) Outcome {
	select {
	case <-r.done:
	case <-ctx.Done():
		if withdraw(r) {
			if r.into != nil {
				return Outcome{Err: fmt.Errorf("%w: waiting among the transfers into ledger %s/%s: %w",
					ErrNotApplied, r.into.Namespace, r.into.Ledger, ctx.Err())}
			}
			return Outcome{Err: fmt.Errorf("%w: waiting for this process's actor of ledger %s/%s: %w",
				ErrNotApplied, r.t.Namespace, r.t.Ledger, ctx.Err())}
		}
		if !r.finished() {
			e.stats.Unknown.Add(1)
			return Outcome{Err: fmt.Errorf("%w: the caller gave up (%w) while the write carrying request %q was under way; retry with the same request id",
				ErrUnknownOutcome, ctx.Err(), r.id)}
		}
	}
	if errors.Is(r.out.Err, ErrUnknownOutcome) {
		e.stats.Unknown.Add(1)
	}
	return r.out
}

// withdraw takes a request its caller gave up on out of its queue or its
// batch, if it is not answered and nothing has claimed or written it yet.
// A failed swap reads the state again: a batch may have put the request
// back in its queue (taken to queued) between two swaps, and it can still
// be withdrawn there.
func withdraw(r *request) bool {
	for !r.finished() {
		st := r.state.Load()
		if st != queued && st != taken {
			return false
		}
		if r.state.CompareAndSwap(st, withdrawn) {
			return true
		}
	}
	return false // answered as the caller gave up: the answer stands
}

// submit queues requests of one ledger in its slot and makes sure a
// goroutine serves the slot.
func (e *Engine) submit(reqs []*request) {
	k := slotKey{reqs[0].t.Namespace, reqs[0].t.Ledger}
	for {
		s := e.slotFor(k)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			continue // retired or evicted since slotFor found it
		}
		s.queue = append(s.queue, reqs...)
		start := !s.serving
		s.serving = true
		s.mu.Unlock()
		if start {
			e.startServing(s)
		}
		return
	}
}

// workerLinger is how long a goroutine that served a queue waits for
// another queue to serve before it ends.
const workerLinger = time.Second

// startServing hands the slot to an idle worker goroutine, or starts one.
func (e *Engine) startServing(s *slot) { e.run(func() { e.serve(s) }) }

// run hands a queue's serving to an idle worker goroutine, or starts one.
// Workers outlive their queue for a while because a new goroutine's stack
// starts small and is copied as it grows through the store's deep call
// paths: with a goroutine per batch that copying took a seventh of the
// CPU of credits spread over many ledgers.
func (e *Engine) run(serve func()) {
	select {
	case e.idle <- serve:
	default:
		go e.worker(serve)
	}
}

func (e *Engine) worker(serve func()) {
	t := time.NewTimer(workerLinger)
	defer t.Stop()
	for {
		serve()
		t.Reset(workerLinger)
		select {
		case serve = <-e.idle:
		case <-t.C:
			return
		case <-e.bg.stop:
			return
		}
	}
}

// serve runs batches of the slot's queue until it is empty. If the slot's
// actor is retired, the requests still queued move to the ledger's next
// slot.
func (e *Engine) serve(s *slot) {
	for {
		s.sem <- struct{}{}
		if s.retired {
			s.unlock()
			e.close(s)
			return
		}
		batch := s.take()
		if len(batch) == 0 {
			e.idleRights(s)
			s.unlock()
			e.trimIdle()
			return
		}
		e.applyGuarded(s, batch)
		s.unlock()
	}
}

// applyGuarded runs a batch, and if it panics retires the actor and
// answers the batch's unanswered requests (answerPanicked), instead of
// taking the process down from a goroutine no handler can recover.
func (e *Engine) applyGuarded(s *slot, batch []*request) {
	defer e.trackBatch()()
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		e.cfg.Logger.Error("ledger: a batch panicked; its committed requests answer unknown_outcome, the others not_applied",
			"namespace", s.key.ns, "ledger", s.key.ledger, "panic", p, "stack", string(debug.Stack()))
		if !s.retired {
			e.retire(s)
		}
		answerPanicked(batch, p)
	}()
	e.applyBatch(s, batch)
}

// answerPanicked answers the requests a batch or a group left unanswered
// when it panicked. One still taken was never claimed nor written (a
// request is committed before either), so it was not applied; one
// committed may have been, so its outcome is unknown. Requests requeued,
// withdrawn or handed off are not the panicking batch's to answer.
func answerPanicked(rs []*request, p any) {
	for _, r := range rs {
		switch {
		// A request the batch answered (a replay, a refusal) stays taken;
		// only the batch's goroutine answers a taken request, so a
		// finished one is left alone.
		case !r.finished() && r.state.CompareAndSwap(taken, withdrawn):
			r.finish(Result{}, fmt.Errorf("%w: internal error before anything was claimed or written for it: %v", ErrNotApplied, p))
		case r.state.Load() == committing && !r.finished():
			r.finish(Result{}, fmt.Errorf("%w: internal error while applying it: %v", ErrUnknownOutcome, p))
		}
	}
}

// trackBatch counts a batch (or a transfer) under way, which Close waits
// for since its writes may need settling, until the returned func runs. One
// that starts after Close began is not waited for.
func (e *Engine) trackBatch() (done func()) {
	e.bg.Lock()
	defer e.bg.Unlock()
	if e.bg.closing {
		return func() {}
	}
	e.bg.batches.Add(1)
	return e.bg.batches.Done
}

// take removes the next batch from the queue: queued requests with the
// first one's target, up to MaxBatch, stopping before a request id the
// batch already carries. With nothing left it marks the slot not served.
// Called with s.sem held.
func (s *slot) take() []*request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var (
		batch []*request
		ids   = map[string]bool{}
		i     int
	)
	for i = 0; i < len(s.queue) && len(batch) < MaxBatch; i++ {
		r := s.queue[i]
		if len(batch) > 0 && (r.t != batch[0].t || ids[r.id]) {
			break
		}
		if !r.state.CompareAndSwap(queued, taken) {
			continue // withdrawn by its caller
		}
		ids[r.id] = true
		batch = append(batch, r)
	}
	s.queue = s.queue[i:]
	if len(s.queue) == 0 {
		s.queue = nil
	}
	if len(batch) == 0 {
		s.serving = false
	}
	return batch
}

// requeue puts requests a batch took back at the head of the queue, in
// order, for the next batch (backToQueue says which). Called with s.sem
// held, by the batch.
func (s *slot) requeue(rs []*request) {
	back := backToQueue(rs)
	if len(back) == 0 {
		return
	}
	s.mu.Lock()
	s.queue = append(back, s.queue...)
	s.mu.Unlock()
}

// backToQueue readies requests that a batch or a group of transfers took,
// and did not claim for good, to be queued again, and returns them. One
// its caller withdrew meanwhile (possible until the commit point, while
// it is taken) was told not_applied, so it stays so: it is answered here
// and not returned.
func backToQueue(rs []*request) []*request {
	var back []*request
	for _, r := range rs {
		r.claim = claimOutcome{}
		if r.state.CompareAndSwap(taken, queued) || r.state.CompareAndSwap(committing, queued) {
			back = append(back, r)
		} else if !r.finished() && r.state.Load() == withdrawn {
			r.finish(Result{}, fmt.Errorf("%w: withdrawn by its caller", ErrNotApplied))
		}
	}
	return back
}

// close closes a retired slot to new requests and moves its queue to the
// ledger's next slot.
func (e *Engine) close(s *slot) {
	s.mu.Lock()
	s.closed = true
	left := s.queue
	s.queue = nil
	s.serving = false
	s.mu.Unlock()
	if len(left) > 0 {
		e.submit(left)
	}
}
