package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"sync"
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
// either both land or neither does. Transfers into one ledger that arrive
// while one is under way share the next write (a group).
func (e *Engine) Transfer(ctx context.Context, from, to Target, amount int64, requestID string) (Result, error) {
	from.Options = from.Options.WithDefaults()
	to.Options = to.Options.WithDefaults()
	if err := checkTransfer(from, to, amount, requestID); err != nil {
		return Result{}, err
	}
	r := &request{t: from, into: &to, amount: -amount, id: requestID, done: make(chan struct{}), stats: &e.stats}
	e.submitTransfer(r)
	out := e.wait(ctx, r)
	return out.Result, out.Err
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

// Groups of transfers.
//
// A ledger that many others pay into used to take one transfer per read,
// claim and write, each holding its actor for all three. Now transfers
// queue on their destination (inbound), and whoever serves the queue takes
// a group: up to maxTransferGroup transfers with distinct ids and distinct
// sources. It holds the actors of every source and of the destination,
// taken in key order (so two groups, or a group and a batch, which holds
// one actor, cannot deadlock), reads every ledger at once, checks and
// claims each debit as a batch of one of its source, and writes the rows
// of every source and of the destination in one WriteLedgerRows call: all
// land or none. Each transfer keeps its own answer. The argument is in
// docs/ledger-transfers.md, "Groups of transfers into one ledger".

const (
	// maxTransferGroup bounds the transfers one group carries.
	maxTransferGroup = 32
	// maxGroupSources bounds the ledgers a group debits: with the
	// destination's, its rows fit one WriteLedgerRows call.
	maxGroupSources = driver.MaxLedgerRowWrites - 1
	// maxGroupSkips bounds the queued transfers a group passes over (a
	// repeated id, another source once the sources are full), so taking a
	// group from a deep queue of transfers from many ledgers costs a
	// bounded scan, not one over the whole queue per group.
	maxGroupSkips = 4 * maxTransferGroup
	// maxGroupBytes bounds the estimated size of a group's rows, well
	// under Cassandra's default batch_size_fail_threshold (50 KiB); the
	// first transfer of a group is carried whatever its size, as a lone
	// transfer always was.
	maxGroupBytes = 32 << 10
	// entryBytes is what an entry adds to a row beyond its request id,
	// generously.
	entryBytes = 32
)

// inboundQueue is the queue of transfers into one ledger, and its presence in
// Engine.inbound means a goroutine serves it.
type inboundQueue struct {
	queue []*request
}

// submitTransfer queues a transfer on its destination and makes sure a
// goroutine serves the queue.
func (e *Engine) submitTransfer(r *request) {
	k := slotKey{r.into.Namespace, r.into.Ledger}
	e.inbound.Lock()
	q, served := e.inbound.m[k]
	if !served {
		q = &inboundQueue{}
		e.inbound.m[k] = q
	}
	q.queue = append(q.queue, r)
	e.inbound.Unlock()
	if !served {
		e.run(func() { e.serveTransfers(k, q) })
	}
}

// serveTransfers applies groups of the queue's transfers until it is
// empty; transfers a group gives back (an actor had to be replaced before
// they were claimed) go first in the next.
func (e *Engine) serveTransfers(k slotKey, q *inboundQueue) {
	for {
		group := e.takeTransfers(k, q)
		if len(group) == 0 {
			return
		}
		back := backToQueue(e.applyTransfers(group))
		if len(back) > 0 {
			e.inbound.Lock()
			q.queue = append(back, q.queue...)
			e.inbound.Unlock()
		}
	}
}

// takeTransfers removes the next group from the queue: queued transfers
// into the first one's target, up to maxTransferGroup from up to
// maxGroupSources ledgers, no two sharing a request id, looking past at
// most maxGroupSkips others; the rest keep their order. With nothing
// left, the queue is no longer served.
func (e *Engine) takeTransfers(k slotKey, q *inboundQueue) []*request {
	e.inbound.Lock()
	defer e.inbound.Unlock()
	var group, skipped []*request
	ids, sources := map[string]bool{}, map[string]bool{}
	i := 0
	for ; i < len(q.queue) && len(group) < maxTransferGroup && len(skipped) < maxGroupSkips; i++ {
		r := q.queue[i]
		if len(group) > 0 && *r.into != *group[0].into || ids[r.id] ||
			!sources[r.t.Ledger] && len(sources) == maxGroupSources {
			skipped = append(skipped, r)
			continue
		}
		if !r.state.CompareAndSwap(queued, taken) {
			continue // withdrawn by its caller
		}
		ids[r.id], sources[r.t.Ledger] = true, true
		group = append(group, r)
	}
	// The skipped transfers go back just before the first one not looked
	// at, in their order, so a deep queue is not copied for each group.
	start := i - len(skipped)
	copy(q.queue[start:i], skipped)
	clear(q.queue[:start]) // taken or withdrawn: let them be collected
	q.queue = q.queue[start:]
	if len(q.queue) == 0 {
		q.queue = nil
	}
	if len(group) == 0 {
		delete(e.inbound.m, k)
	}
	return group
}

// applyTransfers holds the actors of a group's ledgers, in key order,
// while it applies the group, and if that panics retires every actor and
// answers the group's unanswered transfers (answerPanicked). It returns
// the transfers to try again.
func (e *Engine) applyTransfers(group []*request) (again []*request) {
	to := *group[0].into
	keys := []slotKey{{to.Namespace, to.Ledger}}
	for _, r := range group {
		keys = append(keys, slotKey{r.t.Namespace, r.t.Ledger})
	}
	slices.SortFunc(keys, func(a, b slotKey) int { return cmp.Compare(a.ledger, b.ledger) })
	keys = slices.Compact(keys) // a source of several transfers is one actor
	held := make(map[string]*slot, len(keys))
	for _, k := range keys {
		s, err := e.lock(context.Background(), k)
		if err != nil {
			panic(err) // lock fails only when its context ends, and this one does not
		}
		held[k.ledger] = s
		defer s.unlock()
	}

	defer e.trackBatch()()
	func() {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			e.cfg.Logger.Error("ledger: a group of transfers panicked; its committed transfers answer unknown_outcome, the others not_applied",
				"namespace", to.Namespace, "to", to.Ledger, "panic", p, "stack", string(debug.Stack()))
			for _, s := range held {
				if !s.retired {
					e.retire(s)
				}
			}
			answerPanicked(group, p)
			again = nil
		}()
		again = e.applyGroup(to, group, held)
	}()
	for _, s := range held {
		e.idleRights(s)
	}
	return again
}

// source is a ledger a group debits, with its actor, its state as read
// and the group's transfers from it, which are a batch of that actor.
type source struct {
	t   Target
	s   *slot
	st  *State
	err error // what reading it failed with
	rs  []*request
}

// applyGroup reads every ledger of the group, checks each source's debits
// as a batch of its actor checks them (retries, overflow, the floor, the
// claims), and writes every row together. Called with every actor's sem
// held; it runs on its own context, as a batch does: a caller that gives
// up does not cut a claim or a write short.
func (e *Engine) applyGroup(to Target, group []*request, held map[string]*slot) (again []*request) {
	bg := context.Background()
	sB := held[to.Ledger]
	if e.retireAged(to.Options, sB) {
		return group
	}
	var srcs []*source
	byLedger := map[string]*source{}
	for _, r := range group {
		src := byLedger[r.t.Ledger]
		if src == nil {
			src = &source{t: r.t, s: held[r.t.Ledger]}
			byLedger[r.t.Ledger] = src
			srcs = append(srcs, src)
		}
		src.rs = append(src.rs, r)
	}
	srcs = keepSources(srcs, func(src *source) bool {
		if e.retireAged(src.t.Options, src.s) {
			again = append(again, src.rs...)
			return false
		}
		return true
	})
	if len(srcs) == 0 {
		return again
	}

	stB, err := e.readGroup(to, sB, srcs)
	switch {
	case err == nil:
	case errors.Is(err, errReclaimed):
		e.retire(sB) // its rights were reclaimed while idle: a new actor
		for _, src := range srcs {
			again = append(again, src.rs...)
		}
		return again
	default:
		if errors.Is(err, ErrActorConflict) {
			e.retire(sB)
		}
		for _, src := range srcs {
			finishAll(src.rs, transferReadError(to, err))
		}
		return again
	}

	size := 0
	if len(group) > 1 {
		size = len(EncodeActor(sB.own))
	}
	credits := map[*request]*request{}
	var creditList []*request
	srcs = keepSources(srcs, func(src *source) bool {
		switch {
		case src.st != nil:
		case errors.Is(src.err, errReclaimed):
			e.retire(src.s)
			again = append(again, src.rs...)
			return false
		default:
			if errors.Is(src.err, ErrActorConflict) {
				e.retire(src.s)
			}
			finishAll(src.rs, transferReadError(src.t, src.err))
			return false
		}
		var rs []*request
		for _, r := range src.rs {
			// A retry: the source's history holds the debit. The
			// destination's holding the credit says the same once the
			// source's history has folded it (they were written
			// together).
			if f, ok := src.st.Lookup(r.id); ok {
				r.finish(duplicate(r.id, f.Actor, f.Amount, r.amount))
			} else if f, ok := stB.Lookup(r.id); ok {
				r.finish(duplicate(r.id, f.Actor, f.Amount, -r.amount))
			} else {
				rs = append(rs, r)
			}
		}
		if len(rs) == 0 {
			return false
		}
		fresh, err := checkBatch(src.st, rs) // answers the debits that would overflow
		if err != nil {
			finishAll(rs, err)
			return false
		}
		// The rows must fit one store batch: the transfers beyond the
		// bound go in the next group. The first is carried whatever its
		// size, as a lone transfer always was.
		add := 0
		if len(group) > 1 {
			add = len(EncodeActor(src.s.own))
		}
		for i, r := range fresh {
			add += 2 * (len(r.id) + entryBytes)
			if len(creditList)+i > 0 && size+add > maxGroupBytes {
				again = append(again, fresh[i:]...)
				fresh = fresh[:i]
				break
			}
		}
		size += add
		for _, r := range fresh {
			c := &request{t: to, amount: -r.amount, id: r.id, done: make(chan struct{}), stats: &Stats{}}
			c.state.Store(taken)
			credits[r] = c
			creditList = append(creditList, c)
		}
		src.rs = fresh
		return len(fresh) > 0
	})
	if len(srcs) == 0 {
		return again
	}

	// The credits, checked together against the destination's totals.
	fresh, err := checkBatch(stB, creditList)
	if err != nil {
		for _, src := range srcs {
			finishAll(src.rs, err)
		}
		return again
	}
	srcs = keepSources(srcs, func(src *source) bool {
		src.rs = slices.DeleteFunc(src.rs, func(r *request) bool {
			if slices.Contains(fresh, credits[r]) {
				return false
			}
			r.finish(Result{}, credits[r].out.Err) // checkBatch refused the credit
			return true
		})
		return len(src.rs) > 0
	})

	if to.Options.Floored {
		srcs = keepSources(srcs, func(src *source) bool {
			keep, elsewhere, reclaimed := e.checkFloor(bg, src.t, src.s, src.st, src.rs)
			// Refused here, and another actor holds the id's claim:
			// answered as a lost claim is.
			e.handOff(bg, src.t, elsewhere)
			if reclaimed {
				e.retire(src.s)
				again = append(again, keep...)
				return false
			}
			src.rs = keep // checkFloor answered the rest: below the floor, or no rights to be had
			return len(keep) > 0
		})
		// The destination's actor writes only within its lease if it has
		// held rights (credits need none).
		var cs []*request
		for _, src := range srcs {
			for _, r := range src.rs {
				cs = append(cs, credits[r])
			}
		}
		if len(cs) > 0 {
			if _, _, reclaimed := e.checkFloor(bg, to, sB, stB, cs); reclaimed {
				e.retire(sB)
				for _, src := range srcs {
					again = append(again, src.rs...)
				}
				return again
			}
		}
	}
	// From here on the group claims and writes: a caller that gave up
	// before this point has withdrawn its transfer.
	srcs = keepSources(srcs, func(src *source) bool {
		src.rs = slices.DeleteFunc(src.rs, func(r *request) bool {
			if r.state.CompareAndSwap(taken, committing) {
				return false
			}
			r.finish(Result{}, fmt.Errorf("%w: withdrawn by its caller before anything was claimed or written", ErrNotApplied))
			return true
		})
		return len(src.rs) > 0
	})
	if len(srcs) == 0 {
		return again
	}

	// Entry numbers after the overflow rule, as a batch gets them: each
	// debit's, if every debit before it of its source is written.
	secB := sB.own.Section(false)
	secB.Compact(to.Options.HistoryLength)
	for _, src := range srcs {
		sec := src.s.own.Section(true)
		sec.Compact(src.t.Options.HistoryLength)
		next := sec.Seq()
		for _, r := range src.rs {
			next++
			r.neg, r.abs = true, -r.amount
			r.claim = claimOutcome{mine: driver.Claim{Actor: src.s.actor, Negative: true, Seq: next, Amount: r.amount}}
		}
	}

	claimed := e.cfg.Clock.Now()
	claims := to.Options.Mode.claims()
	retire := make([]bool, len(srcs))
	if claims {
		var requeue []*request
		srcs, retire, requeue = e.claimGroup(srcs, claimed)
		again = append(again, requeue...)
		if len(srcs) == 0 {
			return again
		}
	}

	at := driver.Micros(e.cfg.Clock.Now())
	keep := to.Options.keepsEntries()
	parts := make([]rowPart, 0, len(srcs)+1)
	sent := make([]int64, len(srcs))
	var entriesB []driver.LedgerEntry
	for i, src := range srcs {
		sent[i], _ = src.s.own.N.Sum()
		var entriesA []driver.LedgerEntry
		for _, r := range src.rs {
			seqA, err := src.s.own.Section(true).Append(Entry{RequestID: r.id, Amount: r.abs})
			if err != nil {
				panic(err) // checkBatch bounded the totals
			}
			seqB, err := secB.Append(Entry{RequestID: r.id, Amount: r.abs})
			if err != nil {
				panic(err)
			}
			if keep {
				entriesA = append(entriesA, driver.LedgerEntry{At: at, Actor: src.s.actor, Negative: true, Seq: seqA, RequestID: r.id, Amount: r.abs})
				entriesB = append(entriesB, driver.LedgerEntry{At: at, Actor: sB.actor, Seq: seqB, RequestID: r.id, Amount: r.abs})
			}
		}
		parts = append(parts, rowPart{t: src.t, s: src.s, entries: entriesA, debits: true})
	}
	parts = append(parts, rowPart{t: to, s: sB, entries: entriesB})
	err = e.writeRows(bg, parts)
	switch {
	case err == nil:
		for _, src := range srcs {
			for _, r := range src.rs {
				r.finish(Result{Applied: true, Actor: src.s.actor}, nil)
			}
		}
	case errors.Is(err, ErrNotApplied):
		// Nothing landed: each source's rights count only the debits
		// written before this one, and the claims are withdrawn.
		for i, src := range srcs {
			e.retireCounting(src.s, sent[i])
		}
		e.retire(sB)
		for _, src := range srcs {
			if claims {
				for _, r := range src.rs {
					e.releaseOrSettle(src.t, r.id, r.claim.mine, claimed, r.claim.resubmitted)
				}
			}
			finishAll(src.rs, err)
		}
	default:
		for _, src := range srcs {
			e.retire(src.s)
		}
		e.retire(sB)
		if claims {
			var ids []string
			for _, src := range srcs {
				ids = append(ids, requestIDs(src.rs)...)
			}
			// The claims keep other actors from applying the transfers,
			// so this process may finish the write late.
			e.settleRows(parts, ids, claimed)
			err = fmt.Errorf("%w (this process keeps resubmitting the write of the rows in the background while the claims live)", err)
		}
		for _, src := range srcs {
			finishAll(src.rs, err)
		}
	}
	for i, src := range srcs {
		if retire[i] && !src.s.retired {
			e.retire(src.s)
		}
	}
	return again
}

// readGroup reads the destination and the sources at once, and returns
// the destination's state; each source's state, or what its read failed
// with, goes in the source.
func (e *Engine) readGroup(to Target, sB *slot, srcs []*source) (*State, error) {
	var (
		stB  *State
		errB error
		wg   sync.WaitGroup
	)
	read := func(t Target, s *slot, st **State, err *error) {
		defer func() {
			if p := recover(); p != nil {
				*st, *err = nil, fmt.Errorf("internal error while reading: %v", p)
			}
		}()
		*st, *err = e.readMerged(context.Background(), t, s)
	}
	// With one source the reads go one after the other: a goroutine's
	// stack would grow through the store's read path for one read, and
	// most groups of ledgers that are not hot have one transfer.
	if len(srcs) == 1 {
		read(srcs[0].t, srcs[0].s, &srcs[0].st, &srcs[0].err)
	} else {
		for _, src := range srcs {
			wg.Go(func() { read(src.t, src.s, &src.st, &src.err) })
		}
	}
	read(to, sB, &stB, &errB)
	wg.Wait()
	return stB, errB
}

// transferReadError is what a transfer answers when a read of one of its
// ledgers failed: nothing was claimed or written yet.
func transferReadError(t Target, err error) error {
	if errors.Is(err, ErrActorConflict) || errors.Is(err, ErrCorrupt) {
		return err
	}
	return fmt.Errorf("%w: reading ledger %s/%s: %w", ErrNotApplied, t.Namespace, t.Ledger, err)
}

// claimGroup claims each source's debits as a batch of its actor claims
// them, every source at once. It returns the sources with debits to
// write (only those), whether each of them must retire its actor after
// the write, and the debits to try again. Lost claims are answered as a
// batch answers them, by the claimant's write.
func (e *Engine) claimGroup(srcs []*source, claimed time.Time) (write []*source, retire []bool, again []*request) {
	type outcome struct {
		write, lost, again []*request
		retire             bool
	}
	outs := make([]outcome, len(srcs))
	claim := func(i int, src *source) {
		defer func() {
			if p := recover(); p != nil {
				// Whatever the store did is unknown.
				outs[i] = outcome{retire: true}
				for _, r := range src.rs {
					if !r.finished() {
						r.finish(Result{}, fmt.Errorf("%w: internal error while claiming: %v", ErrUnknownOutcome, p))
					}
				}
			}
		}()
		w, l, a, ret := e.claimBatch(src.t, src.rs, claimed)
		outs[i] = outcome{w, l, a, ret}
	}
	var wg sync.WaitGroup
	for i, src := range srcs[1:] {
		wg.Go(func() { claim(i+1, src) })
	}
	claim(0, srcs[0])
	wg.Wait()
	for i, src := range srcs {
		o := outs[i]
		e.answerLost(context.Background(), src.t, o.lost) // hands them off
		again = append(again, o.again...)
		switch {
		case len(o.write) > 0:
			src.rs = o.write
			write = append(write, src)
			retire = append(retire, o.retire)
		case o.retire && !src.s.retired:
			e.retire(src.s)
		}
	}
	return write, retire, again
}

// keepSources returns the sources keep accepts, in order.
func keepSources(srcs []*source, keep func(*source) bool) []*source {
	var kept []*source
	for _, src := range srcs {
		if keep(src) {
			kept = append(kept, src)
		}
	}
	return kept
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
