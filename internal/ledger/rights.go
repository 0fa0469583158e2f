package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// Balance floors.
//
// A check of "value − debit ≥ floor" on a read is a check on the past: two
// servers that both read 10 and both debit 10 leave −10. So the balance
// above the floor is handed out as rights to debit, held per actor in the
// ledger's rights record, which changes only by compare-and-set. An actor
// appends debits only while its debit total stays within its grant, and a
// grant is made only while everything handed out stays within the credits
// seen minus the floor. Credits only add, so value = P − Σ N ≥ P − Σ
// granted ≥ floor in every state a reader can see. The argument, with
// what it assumes of the store, is in docs/ledger.md, "Balance floors".

// Defaults of the floor's Config fields.
const (
	DefaultRightsLease     = 10 * time.Minute
	DefaultLateWriteWindow = 3*time.Hour + 10*time.Minute
	DefaultRightsIdle      = time.Second
)

// errLeaseEnded refuses to send a write with debits after the actor's
// lease on its rights ended. Not retried: only a new lease would help,
// and the batch's check got one if it could.
var errLeaseEnded = errors.New("the actor's lease on its debit rights has ended")

// rightsAttempts bounds the compare-and-set rounds of one grant: each lost
// round means another actor changed the record, which is progress.
const rightsAttempts = 8

// slotRights is what a slot's actor knows of its own grant. Guarded by the
// slot's sem. The record is the truth; this is never more than it, since
// only this actor raises its own grant, and a reclaim takes it only after
// the lease has ended, when the actor no longer sends debits.
type slotRights struct {
	t     Target // the ledger the grant is for, to return it
	total int64  // the grant: the debit total the actor may reach
	until int64  // the lease's end, microseconds
	// idle returns the unused part of the grant once the slot has had no
	// batch for RightsIdle (idleReturn); nil when none is pending.
	idle *time.Timer
	// raiseAfter: a raise of the data center's share failed (the data
	// centers cut apart, most likely), and none is tried again before
	// this time, microseconds, so that debits refused for want of rights
	// meanwhile are answered at once, not after another wait on a store
	// that cannot answer.
	raiseAfter int64
}

// raiseHoldOff is how long after a failed raise of a share the next one
// waits.
const raiseHoldOff = time.Second

// errReclaimed says the actor has debited, yet the rights record no
// longer lists it: its rights were reclaimed (its lease ended while it
// was idle) and its debit total counted in spent. Such an actor must never
// debit again, or its earlier debits would need rights a second time.
var errReclaimed = errors.New("the actor's rights were reclaimed while it was idle")

// checkFloor refuses the debits of a batch that its actor's rights do not
// cover, asking the rights record for more first if needed, and returns
// the requests that may go on, and those not covered whose id another
// actor has claimed (exact mode): another copy of the request is being
// applied there, so they are answered as a lost claim is, not refused.
// reclaimed says the actor may not debit any more (errReclaimed): the
// caller retires it and gives the whole batch to the next actor. Called
// with s.sem held.
func (e *Engine) checkFloor(ctx context.Context, t Target, s *slot, st *State, fresh []*request) (keep, elsewhere []*request, reclaimed bool) {
	used, _ := s.own.N.Sum()
	// needs[i] is the debit total the actor reaches with the batch's
	// first i+1 debits.
	var needs []int64
	for _, r := range fresh {
		if r.neg {
			needs = append(needs, saturatingAdd(cmp.Or(lastOf(needs), used), r.abs))
		}
	}
	now := driver.Micros(e.cfg.Clock.Now())
	// An actor that has held rights writes only within its lease, credits
	// too (writeOwn): it renews the lease at half time.
	renew := s.rights.until != 0 && s.rights.until-now < int64(e.cfg.RightsLease/time.Microsecond)/2
	if len(needs) == 0 && !renew {
		return fresh, nil, false
	}
	var grantErr error
	if renew || lastOf(needs) > s.rights.total {
		grantErr = e.acquireRights(ctx, t, s, st, needs)
		if errors.Is(grantErr, errReclaimed) {
			return fresh, nil, true
		}
	}
	if len(needs) == 0 {
		// Credits need no rights, only time left to write them in; if
		// the lease could not be renewed, an actor without one writes
		// them.
		left := s.rights.until - driver.Micros(e.cfg.Clock.Now())
		return fresh, nil, left <= int64(e.cfg.WriteTimeout/time.Microsecond)
	}
	// The batch's writes must all be sent before the lease ends; writeOwn
	// checks each attempt, this only avoids starting a batch that would
	// be cut short.
	leased := s.rights.until-driver.Micros(e.cfg.Clock.Now()) > int64(e.cfg.WriteTimeout/time.Microsecond)
	value, _ := st.Value()
	keep, running := fresh[:0], used
	type refusal struct {
		r   *request
		err error
	}
	var refused []refusal
	for _, r := range fresh {
		if !r.neg {
			keep = append(keep, r)
			continue
		}
		if leased && saturatingAdd(running, r.abs) <= s.rights.total {
			running += r.abs
			keep = append(keep, r)
			continue
		}
		var err error
		switch after := saturatingAdd(value, -saturatingAdd(running-used, r.abs)); {
		case after < t.Options.Floor:
			err = fmt.Errorf("%w: the ledger's value is %d, the floor %d, and the debit %d", ErrBelowFloor, saturatingAdd(value, -(running-used)), t.Options.Floor, r.abs)
		case grantErr != nil:
			// The cause is told, not wrapped: a store's "unknown outcome"
			// is about the grant, and the debit was not applied.
			err = fmt.Errorf("%w: could not get rights to debit from the ledger's rights record: %v", ErrNotApplied, grantErr)
		case e.cfg.DataCenter != "":
			err = fmt.Errorf("%w: this server's actor holds rights for %d more, within data center %s's share of the balance, which could not be raised now; the value is %d, the floor %d",
				ErrRightsHeld, max(s.rights.total-running, 0), e.cfg.DataCenter, saturatingAdd(value, -(running-used)), t.Options.Floor)
		default:
			err = fmt.Errorf("%w: this server's actor holds rights for %d more; the value is %d, the floor %d", ErrRightsHeld, max(s.rights.total-running, 0), saturatingAdd(value, -(running-used)), t.Options.Floor)
		}
		refused = append(refused, refusal{r, err})
	}
	if !t.Options.Mode.claims() {
		for _, f := range refused {
			f.r.finish(Result{}, f.err)
		}
		return keep, nil, false
	}
	// A copy of the request sent earlier, to any server, may hold its
	// claim and be on its way to applying it: refusing this copy would
	// tell the caller "not applied" about a request that is. One SERIAL
	// read per refusal finds such a claim; a batch's reads run at once.
	type found struct {
		cur driver.Claim
		ok  bool
		err error
	}
	finds := make([]found, len(refused))
	var wg sync.WaitGroup
	for i, f := range refused {
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil {
					finds[i].err = fmt.Errorf("internal error while reading the claim: %v", p)
				}
			}()
			rctx, cancel := context.WithTimeout(ctx, e.cfg.WriteTimeout)
			defer cancel()
			finds[i].cur, finds[i].ok, finds[i].err = e.cfg.Store.ReadClaim(rctx, &driver.ReadClaimParams{
				Namespace: t.Namespace, Ledger: t.Ledger, RequestID: f.r.id,
				Now: driver.Micros(e.cfg.Clock.Now()), Consistency: t.WriteConsistency,
			})
		})
	}
	wg.Wait()
	for i, f := range refused {
		cur, ok, err := finds[i].cur, finds[i].ok, finds[i].err
		switch {
		case err != nil:
			f.r.finish(Result{}, fmt.Errorf("%w: refused here (%v), but whether another copy of the request is being applied elsewhere could not be read: %w", ErrUnknownOutcome, f.err, err))
		case ok:
			f.r.claim = claimOutcome{cur: cur}
			elsewhere = append(elsewhere, f.r)
		default:
			f.r.finish(Result{}, f.err)
		}
	}
	return keep, elsewhere, false
}

// lastOf is the last element, 0 for none.
func lastOf(s []int64) int64 {
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1]
}

// acquireRights raises the actor's grant to cover as many of needs (the
// debit totals a batch's debits take the actor to, in order) as the
// balance allows, and renews its lease, with a compare-and-set on the ledger's
// rights record. It also reclaims the rights of actors whose lease ended
// long enough ago that none of their writes can still land. On return
// s.rights is what the record is known to hold for the actor, whether or
// not the grant succeeded. st is a read of the ledger made before the call
// (its credits can only have grown since).
func (e *Engine) acquireRights(ctx context.Context, t Target, s *slot, st *State, needs []int64) error {
	s.rights.t = t
	p, _, err := st.Totals()
	if err != nil {
		return err
	}
	dc := e.cfg.DataCenter
	var last error
	raised := false
	for n := range rightsAttempts {
		if n > 0 {
			if err := e.backoff(ctx, n-1); err != nil {
				return errors.Join(last, err)
			}
		}
		rec, err := e.readRights(ctx, t, dc)
		if err != nil {
			last = err
			if errors.Is(err, ErrCorrupt) {
				return err
			}
			continue
		}
		// The record is the truth about this actor's grant: a swap
		// reported as failed may have landed.
		mine, listed := rec.grants[s.actor]
		if used, _ := s.own.N.Sum(); !listed && (used > 0 || s.rights.until != 0) {
			return errReclaimed
		}
		s.rights.total, s.rights.until = mine.total, mine.until
		now := driver.Micros(e.cfg.Clock.Now())

		next := rec.clone()
		reclaimed, err := e.reclaim(ctx, t, next, s.actor, now)
		if err != nil {
			e.cfg.Logger.Warn("ledger: could not read the ledger at ALL, or fence the rows, to reclaim the debit rights of stopped actors; they stay held",
				"namespace", t.Namespace, "ledger", t.Ledger, "err", err)
		}
		if reclaimed.p > p {
			p = reclaimed.p
		}
		// What the record may hand out in all: the balance above the
		// floor, or in a data center's record its share.
		budget := saturatingAdd(p, -t.Options.Floor)
		if dc != "" {
			budget = next.cap
		}
		free := saturatingAdd(budget, -next.held())
		if short := lastOf(needs) - mine.total; dc != "" && short > free && !raised && now >= s.rights.raiseAfter {
			// Once per grant: a share raised (or synced) is read back on
			// the next round; one that cannot be raised (the data
			// centers cut apart) leaves what the share has.
			raised = true
			if err := e.raiseShare(ctx, t, next, short-free); err != nil {
				last = err
				s.rights.raiseAfter = driver.Micros(e.cfg.Clock.Now().Add(raiseHoldOff))
				e.cfg.Logger.Info("ledger: could not raise this data center's share of the ledger's debit rights; debits go on within the share it has",
					"namespace", t.Namespace, "ledger", t.Ledger, "data_center", dc, "err", err)
			} else {
				continue
			}
		}
		total := mine.total
		if short := lastOf(needs) - mine.total; short <= 0 {
			// Covered already: only the lease is renewed.
		} else if short <= free {
			// Ask for more than the batch needs, so a steady stream of
			// debits far from the floor rarely comes back here: a share
			// of what is left, split with the other actors holding some.
			total += short + (free-short)/int64(2*(len(next.grants)+1))
		} else {
			// Enough for the batch's first debits, if any fit; never
			// rights that no debit here can use, which would only keep
			// them from other actors.
			for _, n := range needs {
				if n-mine.total <= free {
					total = max(total, n)
				}
			}
		}
		// Never earlier than the lease it replaces, even if the clock
		// stepped back: a reclaim waits from the latest lease end.
		until := max(mine.until, now+int64(e.cfg.RightsLease/time.Microsecond))
		if total == mine.total && mine.until-now >= int64(e.cfg.RightsLease/time.Microsecond)/2 && reclaimed.n == 0 {
			return nil // nothing to ask for: the balance is all handed out
		}
		if dc != "" && total == 0 && mine.until == 0 && reclaimed.n == 0 {
			// Nothing to grant a new actor: it stays out of the record,
			// where a fold could not find it if its data center holds no
			// share yet. Its debits are refused for want of rights.
			return nil
		}
		next.grants[s.actor] = grant{total: total, until: until}
		next.version++
		applied, err := e.swapRights(ctx, t, dc, rec.version, next)
		if err != nil {
			last = err
			continue // the next round reads what became of it
		}
		if applied {
			s.rights.total, s.rights.until = total, until
			return nil
		}
		last = errors.New("the rights record changed under a concurrent grant")
	}
	return fmt.Errorf("%d rounds: %w", rightsAttempts, last)
}

// reclaimed is what reclaim did: how many actors' rights it folded, and
// the credits total the ALL read saw (0 if it read nothing).
type reclaimed struct {
	n int
	p int64
}

// reclaim folds into next.spent the debit totals of the actors (other than
// self) whose lease ended more than LateWriteWindow ago, and drops their
// grants. Their debit totals are read at ALL: a write they sent before
// their lease ended has normally landed by now, and a read at ALL sees it
// whichever replicas it reached. "Normally" is not enough: a hint can be
// delivered days later when the node holding it was down, and a process
// can stall between its lease check and its send. So each such actor's
// row is first fenced: written again, as read, at driver.FenceTimestamp,
// above any timestamp the actor itself uses, so any write of it that
// lands later loses to the fence and the total counted stays its total.
// If the read or a fence fails the rights stay held.
func (e *Engine) reclaim(ctx context.Context, t Target, next *rights, self string, now int64) (reclaimed, error) {
	window := int64(e.cfg.LateWriteWindow / time.Microsecond)
	var stale []string
	for a, g := range next.grants {
		if a != self && now-g.until > window {
			stale = append(stale, a)
		}
	}
	if len(stale) == 0 {
		return reclaimed{}, nil
	}
	rctx, cancel := context.WithTimeout(ctx, e.cfg.WriteTimeout)
	defer cancel()
	// Every row, from the first: a stale holder is fenced with its whole
	// row even if a fold had passed it (the cut stays below every holder,
	// so only broken timing assumptions would put one there), never with
	// an empty one that would hide its entries from the history.
	rows, err := e.readRows(rctx, t, driver.All, "")
	if err != nil {
		return reclaimed{}, err
	}
	st := rows.value()
	p, _, err := st.Totals()
	if err != nil {
		return reclaimed{}, err
	}
	fenced := make([]error, len(stale))
	var wg sync.WaitGroup
	for i, a := range stale {
		row := rows.state[a]
		if row == nil {
			row = &Actor{} // a row may still land: fence it with none
		}
		wg.Go(func() {
			fctx, cancel := context.WithTimeout(ctx, e.cfg.WriteTimeout)
			defer cancel()
			fenced[i] = e.cfg.Store.WriteLedgerRow(fctx, &driver.WriteLedgerRowParams{
				Namespace: t.Namespace, Ledger: t.Ledger,
				Row:       driver.LedgerRow{Actor: a, State: EncodeActor(row)},
				Timestamp: fenceTimestamp(row), Consistency: t.WriteConsistency,
			})
		})
	}
	wg.Wait()
	if err := errors.Join(fenced...); err != nil {
		return reclaimed{}, fmt.Errorf("fencing the rows of actors whose rights are reclaimed: %w", err)
	}
	for _, a := range stale {
		var used int64
		if row := rows.state[a]; row != nil {
			if used, _ = row.N.Sum(); used < 0 {
				used = 0
			}
		}
		// What the actor used stays counted; the rest of its grant is
		// free again.
		next.spent = saturatingAdd(next.spent, used)
		delete(next.grants, a)
	}
	return reclaimed{n: len(stale), p: p}, nil
}

// minFenceTimestamp is the lowest timestamp fenceTimestamp gives: any row
// at or above it is a fence. Far above every clock-based timestamp (about
// 2^63 − 2^60 microseconds: the year 250,000).
const minFenceTimestamp = driver.FenceTimestamp - fenceSeqLimit<<20 - (1<<20 - 1)

// fenceSeqLimit caps the entry numbers that order fences.
const fenceSeqLimit = 1<<40 - 1

// fenceTimestamp is the timestamp of a fence of row. Two reclaimers may
// fence one actor at once, from reads a late write came between; last
// write wins must then keep the fence with the fewest debits (never more
// than either counted), and of those the one with the most credits (never
// fewer than a grant may have seen). So the timestamp falls with the
// debit section's number and rises with the credit section's.
func fenceTimestamp(row *Actor) int64 {
	return driver.FenceTimestamp - int64(min(row.N.Seq(), fenceSeqLimit))<<20 - (1<<20 - 1) + int64(min(row.P.Seq(), 1<<20-1))
}

// returnRights gives back, in the background, the part of a dropped
// actor's grant it did not use; used is at least the debit total of any
// of its rows that may land. Called with s.sem held, as the slot is
// retired or evicted.
func (e *Engine) returnRights(s *slot, used int64) {
	r := s.rights
	if r.idle != nil {
		r.idle.Stop()
	}
	if r.total == 0 && r.until == 0 {
		return // never asked for rights
	}
	actor := s.actor
	started := e.goSettle(func(stop <-chan struct{}) {
		deadline := e.cfg.Clock.Now().Add(e.cfg.WriteTimeout * rightsAttempts)
		err := e.retryUntil(stop, deadline, func(ctx context.Context) error {
			return e.giveBack(ctx, r.t, actor, used)
		})
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), e.cfg.WriteTimeout)
			e.returnShare(ctx, r.t)
			cancel()
		}
		if err != nil {
			e.cfg.Logger.Info("ledger: could not return unused debit rights; they come back when the lease has ended and the late-write window passed",
				"namespace", r.t.Namespace, "ledger", r.t.Ledger, "actor", actor, "err", err)
		}
	})
	if !started {
		e.cfg.Logger.Info("ledger: not returning unused debit rights (closed, or too much pending in the background); they come back when the lease has ended and the late-write window passed",
			"namespace", r.t.Namespace, "ledger", r.t.Ledger, "actor", actor)
	}
}

// returnAllRights returns the unused rights of every slot the engine
// holds, as it closes, several at once. Each slot with rights is dropped
// first, whatever becomes of its return: a later request of its ledger
// gets a new actor, never one the record may no longer list. A slot still
// busy when ctx ends keeps its rights until its lease runs out.
func (e *Engine) returnAllRights(ctx context.Context) {
	e.mu.Lock()
	var held []*slot
	for _, el := range e.slots {
		held = append(held, el.Value.(*slot))
	}
	e.mu.Unlock()
	var wg sync.WaitGroup
	limit := make(chan struct{}, 16)
	for _, s := range held {
		select {
		case s.sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		r := s.rights
		if s.retired || (r.total == 0 && r.until == 0) {
			s.unlock()
			continue
		}
		if r.idle != nil {
			r.idle.Stop()
		}
		e.drop(s)
		used, _ := s.own.N.Sum()
		s.unlock()
		limit <- struct{}{}
		wg.Go(func() {
			defer func() { <-limit }()
			err := e.attempts(ctx, max(r.t.Options.RetryCount, rightsAttempts), "return of debit rights", func(ctx context.Context) error {
				return e.giveBack(ctx, r.t, s.actor, used)
			})
			if err == nil {
				// What the data center's record no longer hands out goes
				// back to the ledger: this process may be its last.
				e.returnShare(ctx, r.t)
			}
			if err != nil {
				e.cfg.Logger.Info("ledger: could not return unused debit rights on close; they come back when the lease has ended and the late-write window passed",
					"namespace", r.t.Namespace, "ledger", r.t.Ledger, "actor", s.actor, "err", err)
			}
		})
	}
	wg.Wait()
}

// idleRights arms, as the slot goes idle, the return of the part of its
// grant it has not used, after RightsIdle without a batch. Called with
// s.sem held.
func (e *Engine) idleRights(s *slot) {
	if s.retired || s.rights.total == 0 {
		return
	}
	if used, _ := s.own.N.Sum(); s.rights.total <= used {
		return
	}
	if s.rights.idle == nil {
		s.rights.idle = time.AfterFunc(e.cfg.RightsIdle, func() { e.shrinkIdle(s) })
	} else {
		s.rights.idle.Reset(e.cfg.RightsIdle)
	}
}

// shrinkIdle lowers an idle actor's grant to what it has used, keeping
// the actor and its lease: the rest is free for other actors, and this
// one asks again with its next debit. A slot found busy is left alone;
// going idle again re-arms the return.
func (e *Engine) shrinkIdle(s *slot) {
	select {
	case s.sem <- struct{}{}:
	default:
		return
	}
	s.mu.Lock()
	busy := s.serving || len(s.queue) > 0
	s.mu.Unlock()
	used, _ := s.own.N.Sum()
	if busy || s.retired || s.rights.total <= used {
		if !busy && !s.retired && s.rights.total > used {
			s.rights.idle.Reset(e.cfg.RightsIdle) // held by a find or a close: later
		}
		s.unlock()
		return
	}
	// In the background, so Close waits for it; the slot stays locked
	// until it is done, so no batch debits meanwhile.
	if !e.goSettle(func(stop <-chan struct{}) {
		defer s.unlock()
		t := s.rights.t
		for n := range rightsAttempts {
			if n > 0 && e.backoff(context.Background(), n-1) != nil {
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), e.cfg.WriteTimeout)
			rec, err := e.readRights(ctx, t, e.cfg.DataCenter)
			if err != nil {
				cancel()
				continue
			}
			mine, ok := rec.grants[s.actor]
			if !ok || mine.total <= used {
				cancel()
				return
			}
			next := rec.clone()
			next.grants[s.actor] = grant{total: used, until: mine.until}
			next.version++
			applied, err := e.swapRights(ctx, t, e.cfg.DataCenter, rec.version, next)
			// A swap of unknown outcome may have landed: believe the
			// smaller grant, which only holds back rights until the next
			// grant reads the record.
			if err != nil || applied {
				s.rights.total = used
			}
			if applied {
				e.returnShare(ctx, t)
				cancel()
				return
			}
			cancel()
		}
	}) {
		s.unlock()
	}
}

// giveBack takes an actor out of the ledger's rights record, counting its
// debit total in spent: the rest of its grant is free again. used must be
// at least the debit total of any row of the actor that may still land
// (its own state is: it is never behind a write it sent), and the actor
// must send no debits after it. A lost race is reported as an unknown
// outcome, which the callers retry.
func (e *Engine) giveBack(ctx context.Context, t Target, actor string, used int64) error {
	rec, err := e.readRights(ctx, t, e.cfg.DataCenter)
	if err != nil {
		return err
	}
	if _, ok := rec.grants[actor]; !ok {
		return nil // reclaimed, or returned by an earlier round
	}
	next := rec.clone()
	next.spent = saturatingAdd(next.spent, max(used, 0))
	delete(next.grants, actor)
	next.version++
	applied, err := e.swapRights(ctx, t, e.cfg.DataCenter, rec.version, next)
	if err == nil && !applied {
		err = fmt.Errorf("%w: the rights record changed under the return", driver.ErrUnknownOutcome)
	}
	return err
}

// readRights reads the ledger's rights record, or data center dc's
// record of its share.
func (e *Engine) readRights(ctx context.Context, t Target, dc string) (*rights, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.WriteTimeout)
	defer cancel()
	rec, err := e.cfg.Store.ReadLedgerRights(ctx, &driver.ReadLedgerRightsParams{
		Namespace: t.Namespace, Ledger: t.Ledger, DataCenter: dc, Consistency: t.WriteConsistency,
	})
	if err != nil {
		return nil, err
	}
	r, err := decodeRights(rec.Version, rec.State)
	if err != nil {
		return nil, fmt.Errorf("ledger %s/%s: %w", t.Namespace, t.Ledger, err)
	}
	return r, nil
}

func (e *Engine) swapRights(ctx context.Context, t Target, dc string, expect int64, next *rights) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.WriteTimeout)
	defer cancel()
	applied, _, err := e.cfg.Store.SwapLedgerRights(ctx, &driver.SwapLedgerRightsParams{
		Namespace: t.Namespace, Ledger: t.Ledger, DataCenter: dc, Expect: expect,
		Next:        driver.LedgerRights{Version: next.version, State: encodeRights(next)},
		Consistency: t.WriteConsistency,
	})
	return applied, err
}
