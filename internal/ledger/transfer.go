package ledger

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// Transfers.
//
// A transfer moves an amount from one ledger to another of the same
// namespace under one request id: a debit appended to this process's actor
// of the source and a credit appended to its actor of the destination,
// both rows written by one driver.Ledgers.WriteLedgerRows call, which lands
// both or neither. The request id is a request id of the source: in exact
// mode it is claimed there, as a debit's would be, and the source's floor
// applies to the debit as to any debit. The credit carries the same id,
// unclaimed: only the holder of the source's claim writes it. The argument
// is in docs/ledger-transfers.md.

// ErrSameLedger refuses a transfer whose source and destination are one
// ledger (it is also ErrInvalidEntry).
var ErrSameLedger = fmt.Errorf("%w: a transfer's source and destination are the same ledger", ErrInvalidEntry)

// Transfer moves amount (positive) from ledger from to ledger to, once
// under requestID. from and to are ledgers of one namespace, so they share
// its options. Its Result and errors mean what Update's mean for the
// debit of the source: Applied false when the transfer was applied before
// (the id is in the source's history or claimed there by the actor that
// applied it); ErrBelowFloor when the source's floor refuses the debit,
// in which case nothing was written to either ledger; ErrUnknownOutcome
// when the write of both rows may or may not have landed, in which case
// either both land or neither does.
func (e *Engine) Transfer(ctx context.Context, from, to Target, amount int64, requestID string) (Result, error) {
	from.Options = from.Options.WithDefaults()
	to.Options = to.Options.WithDefaults()
	if err := checkTransfer(from, to, amount, requestID); err != nil {
		return Result{}, err
	}
	for {
		step := e.transferOnce(ctx, from, to, amount, requestID)
		if step.again {
			continue
		}
		res, err := step.res, step.err
		if step.pending != nil {
			res, err = awaitTransfer(ctx, step.pending)
		}
		if errors.Is(err, ErrUnknownOutcome) {
			e.stats.Unknown.Add(1)
		}
		return res, err
	}
}

// transferStep is what one attempt at a transfer came to.
type transferStep struct {
	res Result
	err error
	// again: an actor had to be replaced before anything was claimed or
	// written; try with the next.
	again bool
	// pending: another actor holds the id's claim, and a goroutine of its
	// own answers the debit (answerLost) once that actor's write shows or
	// the wait ends. It is waited for with both actors let go, as a batch
	// lets go of its actor.
	pending *request
}

// awaitTransfer waits for the answer to a transfer whose id another actor
// claimed, or for the caller to give up: the transfer may then still be
// applied by the claimant, so the answer is unknown.
func awaitTransfer(ctx context.Context, r *request) (Result, error) {
	select {
	case <-r.done:
		return r.out.Result, r.out.Err
	case <-ctx.Done():
		return Result{}, fmt.Errorf("%w: the caller gave up (%w) while another actor held the transfer's claim; retry with the same request id", ErrUnknownOutcome, ctx.Err())
	}
}

func checkTransfer(from, to Target, amount int64, id string) error {
	if err := from.Options.Validate(); err != nil {
		return err
	}
	switch {
	case from.Namespace != to.Namespace || from.Options != to.Options ||
		from.ReadConsistency != to.ReadConsistency || from.WriteConsistency != to.WriteConsistency:
		return fmt.Errorf("%w: a transfer's ledgers must be of one namespace", ErrInvalidEntry)
	case from.Ledger == to.Ledger:
		return ErrSameLedger
	case amount <= 0:
		return fmt.Errorf("%w: a transfer's amount must be positive, not %d", ErrInvalidEntry, amount)
	}
	return ValidateRequestID(id)
}

// transferOnce takes this process's actors of both ledgers, in key order
// so that transfers in opposite directions cannot deadlock, applies the
// transfer with them and lets them go.
func (e *Engine) transferOnce(ctx context.Context, from, to Target, amount int64, id string) (step transferStep) {
	ka, kb := slotKey{from.Namespace, from.Ledger}, slotKey{to.Namespace, to.Ledger}
	first, second := ka, kb
	if kb.ledger < ka.ledger {
		first, second = kb, ka
	}
	s1, err := e.lock(ctx, first)
	if err != nil {
		return transferStep{err: err}
	}
	defer s1.unlock()
	s2, err := e.lock(ctx, second)
	if err != nil {
		return transferStep{err: err}
	}
	defer s2.unlock()
	sA, sB := s1, s2
	if first != ka {
		sA, sB = s2, s1
	}
	// Both are checked: each one too old is retired.
	if agedA, agedB := e.retireAged(from.Options, sA), e.retireAged(to.Options, sB); agedA || agedB {
		return transferStep{again: true}
	}

	defer e.trackBatch()()
	func() {
		defer func() {
			if p := recover(); p != nil {
				e.cfg.Logger.Error("ledger: a transfer panicked; it answers unknown_outcome",
					"namespace", from.Namespace, "from", from.Ledger, "to", to.Ledger, "panic", p, "stack", string(debug.Stack()))
				for _, s := range []*slot{sA, sB} {
					if !s.retired {
						e.retire(s)
					}
				}
				step = transferStep{err: fmt.Errorf("%w: internal error while applying the transfer: %v", ErrUnknownOutcome, p)}
			}
		}()
		step = e.applyTransfer(ctx, from, to, sA, sB, amount, id)
	}()
	for _, s := range []*slot{sA, sB} {
		e.idleRights(s)
	}
	return step
}

// applyTransfer reads both ledgers, checks the debit as a batch of one
// checks it (retries, overflow, the floor, the claim), and writes both
// actor rows together. Called with both slots' sem held.
func (e *Engine) applyTransfer(ctx context.Context, from, to Target, sA, sB *slot, amount int64, id string) transferStep {
	debit := &request{t: from, amount: -amount, id: id, done: make(chan struct{}), stats: &e.stats}
	credit := &request{t: to, amount: amount, id: id, done: make(chan struct{}), stats: &e.stats}
	debit.state.Store(taken)
	credit.state.Store(taken)

	var states [2]*State
	for i, side := range []struct {
		t Target
		s *slot
	}{{from, sA}, {to, sB}} {
		st, err := e.readMerged(ctx, side.t, side.s)
		switch {
		case errors.Is(err, errReclaimed):
			e.retire(side.s) // its rights were reclaimed while idle: a new actor
			return transferStep{again: true}
		case errors.Is(err, ErrActorConflict):
			e.retire(side.s)
			return transferStep{err: err}
		case errors.Is(err, ErrCorrupt):
			return transferStep{err: err}
		case err != nil:
			return transferStep{err: fmt.Errorf("%w: reading ledger %s/%s: %w", ErrNotApplied, side.t.Namespace, side.t.Ledger, err)}
		}
		states[i] = st
	}
	stA, stB := states[0], states[1]

	// A retry: the source's history holds the debit. The destination's
	// holding the credit says the same once the source's history has
	// folded it (they were written together).
	if f, ok := stA.Lookup(id); ok {
		return e.duplicateTransfer(id, f, -amount)
	}
	if f, ok := stB.Lookup(id); ok {
		return e.duplicateTransfer(id, f, amount)
	}
	for _, c := range []struct {
		st *State
		r  *request
	}{{stA, debit}, {stB, credit}} {
		if fresh, err := checkBatch(c.st, []*request{c.r}); err != nil || len(fresh) == 0 {
			if err == nil {
				<-c.r.done // overflow: checkBatch answered it
				err = c.r.out.Err
			}
			return transferStep{err: err}
		}
	}

	// From here on the transfer runs on its own context, as a batch does:
	// a caller that gives up does not cut a claim or a write short.
	bg := context.Background()
	if from.Options.Floored {
		keep, elsewhere, reclaimed := e.checkFloor(bg, from, sA, stA, []*request{debit})
		switch {
		case reclaimed:
			e.retire(sA)
			return transferStep{again: true}
		case len(elsewhere) > 0:
			// Not covered here, and another actor holds the id's claim:
			// answered as a lost claim is.
			e.handOff(bg, from, elsewhere)
			return transferStep{pending: debit}
		case len(keep) == 0:
			<-debit.done // refused: below the floor, or no rights to be had
			return transferStep{err: debit.out.Err}
		}
		// The credit's actor writes only within its lease if it has held
		// rights (credits need none).
		if _, _, reclaimed := e.checkFloor(bg, to, sB, stB, []*request{credit}); reclaimed {
			e.retire(sB)
			return transferStep{again: true}
		}
	}
	if err := ctx.Err(); err != nil {
		return transferStep{err: fmt.Errorf("%w: withdrawn by its caller before anything was claimed or written: %w", ErrNotApplied, err)}
	}
	debit.state.Store(committing)

	// Entry numbers after the overflow rule, as a batch of one gets them.
	secA, secB := sA.own.Section(true), sB.own.Section(false)
	secA.Compact(from.Options.HistoryLength)
	secB.Compact(to.Options.HistoryLength)
	debit.neg, debit.abs = true, amount
	debit.claim = claimOutcome{mine: driver.Claim{Actor: sA.actor, Negative: true, Seq: secA.Seq() + 1, Amount: -amount}}

	claimed := e.cfg.Clock.Now()
	if from.Options.Mode.claims() {
		// A batch of one: claimBatch retires the actor only after a lost
		// or failed claim, both answered here.
		write, lost, _, retire := e.claimBatch(from, []*request{debit}, claimed)
		if retire && !sA.retired {
			e.retire(sA)
		}
		switch {
		case len(lost) > 0:
			e.answerLost(bg, from, lost)
			return transferStep{pending: debit}
		case len(write) == 0:
			<-debit.done // the claim failed: claimBatch answered it
			return transferStep{err: debit.out.Err}
		}
	}

	at := driver.Micros(e.cfg.Clock.Now())
	sentBefore, _ := sA.own.N.Sum()
	seqA, err := secA.Append(Entry{RequestID: id, Amount: amount})
	if err != nil {
		panic(err) // checkBatch bounded the totals
	}
	seqB, err := secB.Append(Entry{RequestID: id, Amount: amount})
	if err != nil {
		panic(err)
	}
	var entriesA, entriesB []driver.LedgerEntry
	if from.Options.keepsEntries() {
		entriesA = []driver.LedgerEntry{{At: at, Actor: sA.actor, Negative: true, Seq: seqA, RequestID: id, Amount: amount}}
		entriesB = []driver.LedgerEntry{{At: at, Actor: sB.actor, Seq: seqB, RequestID: id, Amount: amount}}
	}
	pair := []rowPart{
		{t: from, s: sA, entries: entriesA, debits: true},
		{t: to, s: sB, entries: entriesB},
	}
	if err := e.writeRows(bg, pair); err != nil {
		if errors.Is(err, ErrNotApplied) {
			e.retireCounting(sA, sentBefore)
			e.retire(sB)
			if from.Options.Mode.claims() {
				e.releaseOrSettle(from, id, debit.claim.mine, claimed, debit.claim.resubmitted)
			}
			return transferStep{err: err}
		}
		e.retire(sA)
		e.retire(sB)
		if from.Options.Mode.claims() {
			e.settleRows(pair, []string{id}, claimed)
			err = fmt.Errorf("%w (this process keeps resubmitting the write of both rows in the background while the claim lives)", err)
		}
		return transferStep{err: err}
	}
	e.stats.Applied.Add(1)
	return transferStep{res: Result{Applied: true, Actor: sA.actor}}
}

// duplicateTransfer answers a transfer whose id a ledger's history holds
// with the signed amount want.
func (e *Engine) duplicateTransfer(id string, f Found, want int64) transferStep {
	res, err := duplicate(id, f.Actor, f.Amount, want)
	if err == nil {
		e.stats.Duplicates.Add(1)
	}
	return transferStep{res: res, err: err}
}

// rowPart is one actor row of a write of several rows (writeRows).
type rowPart struct {
	t       Target
	s       *slot
	entries []driver.LedgerEntry
	debits  bool // the row appends debits
}

// leased reports whether the part's write must go out within its actor's
// rights lease (writeOwn says why).
func (p *rowPart) leased() bool {
	return p.t.Options.Floored && (p.debits || p.s.rights.until != 0)
}

// writeRows writes the parts' rows together (driver.WriteLedgerRows),
// resubmitting the same rows at new timestamps after an unknown outcome,
// as writeOwn does for one row. Called with every part's sem held.
func (e *Engine) writeRows(ctx context.Context, parts []rowPart) error {
	writes := make([]*rowWrite, len(parts))
	for i := range parts {
		p := &parts[i]
		if err := e.checkAge(p.t.Options, p.s); err != nil {
			return err
		}
		writes[i] = newRowWrite(p.t, p.s.actor, EncodeActor(p.s.own), p.entries)
	}
	return e.attempts(ctx, parts[0].t.Options.RetryCount, "write", func(ctx context.Context) error {
		now := driver.Micros(e.cfg.Clock.Now())
		ws := make([]driver.WriteLedgerRowParams, len(parts))
		for i := range parts {
			p := &parts[i]
			if p.leased() && now >= p.s.rights.until {
				return errLeaseEnded
			}
			var w *driver.WriteLedgerRowParams
			w, p.s.lastTS = writes[i].at(e.cfg.Clock, p.s.lastTS) // even if the write fails: it may still land
			ws[i] = *w
		}
		return e.cfg.Store.WriteLedgerRows(ctx, ws)
	})
}

// settleRows finishes retired actors' write of several rows in the
// background, always all of them together, as settleWrite does for one.
func (e *Engine) settleRows(parts []rowPart, ids []string, claimed time.Time) {
	type settled struct {
		w    *rowWrite
		last int64
	}
	rows := make([]settled, len(parts))
	deadline := claimed.Add(parts[0].t.Options.ClaimTTL / 2)
	leaseEnd := int64(math.MaxInt64)
	for i := range parts {
		p := &parts[i]
		rows[i] = settled{newRowWrite(p.t, p.s.actor, EncodeActor(p.s.own), p.entries), p.s.lastTS}
		if p.leased() {
			leaseEnd = min(leaseEnd, p.s.rights.until)
		}
	}
	if lease := time.UnixMicro(leaseEnd); leaseEnd != math.MaxInt64 && lease.Before(deadline) {
		deadline = lease
	}
	t := parts[0].t
	started := e.goSettle(func(stop <-chan struct{}) {
		err := e.retryUntil(stop, deadline, func(ctx context.Context) error {
			if driver.Micros(e.cfg.Clock.Now()) >= leaseEnd {
				return errLeaseEnded
			}
			ws := make([]driver.WriteLedgerRowParams, len(rows))
			for i := range rows {
				var w *driver.WriteLedgerRowParams
				w, rows[i].last = rows[i].w.at(e.cfg.Clock, rows[i].last)
				ws[i] = *w
			}
			e.stats.Resubmissions.Add(1)
			return e.cfg.Store.WriteLedgerRows(ctx, ws)
		})
		if err != nil {
			e.cfg.Logger.Warn("ledger: could not finish a strict-mode write of several rows; retries of the request answer unknown until its claim expires",
				"namespace", t.Namespace, "ledger", t.Ledger, "request_ids", ids, "err", err)
		}
	})
	if !started {
		e.cfg.Logger.Warn("ledger: not finishing a strict-mode write of several rows in the background (closed or too many pending)",
			"namespace", t.Namespace, "ledger", t.Ledger, "request_ids", ids)
	}
}
