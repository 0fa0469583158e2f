package ledger

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// Settling strict-mode requests in the background.
//
// A strict-mode claim names the actor and entry that will carry the
// request, and every other actor defers to it: it answers "already
// applied" once that entry appears, and "unknown" until then. So when an
// actor gives up on a request — its write's outcome stayed unknown after
// retry_count resubmissions, or it could not tell whether its claim was
// stored — the request would stay "unknown" everywhere until the claim
// expires. Two background tasks avoid that while the process lives:
//
//   - settleWrite keeps resubmitting the retired actor's last row (the same
//     content, at ever higher timestamps) until one write succeeds. This
//     is safe only because of the claim: no other actor can apply the
//     request meanwhile, so finishing late cannot count it twice. It stops
//     at half the claim's TTL, well before anyone could apply it again.
//     Without strict mode nothing protects a late finish, so nothing is
//     settled in the background there.
//   - releaseOrSettle withdraws a claim that the actor will never fulfil
//     (nothing was written under it), retrying until the withdrawal is
//     known to have happened or the claim has expired anyway.

// maxPending bounds the background tasks; beyond it requests simply stay
// "unknown" until their claims expire.
const maxPending = 10_000

// goSettle runs task in the background unless the engine is closed or too
// much is pending, and reports whether it did.
func (e *Engine) goSettle(task func(stop <-chan struct{})) bool {
	e.bg.Lock()
	defer e.bg.Unlock()
	if e.bg.closed || e.bg.pending >= maxPending {
		return false
	}
	e.bg.pending++
	e.bg.wg.Add(1)
	go func() {
		defer func() {
			e.bg.Lock()
			e.bg.pending--
			e.bg.Unlock()
			e.bg.wg.Done()
		}()
		task(e.bg.stop)
	}()
	return true
}

// retryUntil repeats op with backoff until it succeeds, fails in a way a
// retry cannot mend, the deadline passes or stop closes.
func (e *Engine) retryUntil(stop <-chan struct{}, deadline time.Time, op func(context.Context) error) error {
	for n := 0; ; n++ {
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.WriteTimeout)
		err := op(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if !errors.Is(err, driver.ErrUnknownOutcome) && !errors.Is(err, driver.ErrUnavailable) {
			return err
		}
		wait := max(time.Millisecond, min(e.cfg.RetryBackoff<<min(n, 20), 5*time.Second))
		if e.cfg.Clock.Now().Add(wait).After(deadline) {
			return fmt.Errorf("gave up at the deadline: %w", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-stop:
			t.Stop()
			return fmt.Errorf("engine closed: %w", err)
		}
	}
}

// settleWrite finishes a retired actor's write in the background. The
// slot is retired, so nothing else touches its state.
func (e *Engine) settleWrite(t Target, s *slot, ids []string, entries []driver.LedgerEntry, debits bool, claimed time.Time) {
	w, actor, last := newRowWrite(t, s.actor, EncodeActor(s.own), entries), s.actor, s.lastTS
	deadline := claimed.Add(t.Options.ClaimTTL / 2)
	leaseEnd := int64(math.MaxInt64)
	if t.Options.Floored && (debits || s.rights.until != 0) {
		// No write of an actor that holds a lease, or with debits, goes
		// out after the lease (writeOwn says why); the rights' return,
		// started as the actor retired, may not have landed.
		leaseEnd = s.rights.until
		if lease := time.UnixMicro(leaseEnd); lease.Before(deadline) {
			deadline = lease
		}
	}
	started := e.goSettle(func(stop <-chan struct{}) {
		err := e.retryUntil(stop, deadline, func(ctx context.Context) error {
			if driver.Micros(e.cfg.Clock.Now()) >= leaseEnd {
				return errLeaseEnded
			}
			var p *driver.WriteLedgerRowParams
			p, last = w.at(e.cfg.Clock, last)
			e.stats.Resubmissions.Add(1)
			return e.cfg.Store.WriteLedgerRow(ctx, p)
		})
		if err != nil {
			e.cfg.Logger.Warn("ledger: could not finish a strict-mode write; retries of the request answer unknown until its claim expires",
				"namespace", t.Namespace, "ledger", t.Ledger, "request_ids", ids, "actor", actor, "err", err)
		}
	})
	if !started {
		e.cfg.Logger.Warn("ledger: not finishing a strict-mode write in the background (closed or too many pending)",
			"namespace", t.Namespace, "ledger", t.Ledger, "request_ids", ids)
	}
}

// releaseOrSettle withdraws a claim this actor made but will not fulfil.
// It tries once in the caller's path and reports whether that worked; if
// not, it keeps trying in the background until the claim would have
// expired anyway.
//
// A withdrawal that finds no claim of ours is not the end of it: the
// claim's own lightweight transaction may still be running on the store
// (its caller timed out, the coordinator did not) and land after the
// withdrawal, naming an actor that will never write the entry, which would
// make every retry of the request answer "unknown" until the claim
// expires. So the withdrawal is repeated in the background for a while,
// long enough for any such transaction to have finished.
//
// mayLandLate says an attempt to store the claim had an unknown outcome:
// that attempt may store it again even after a withdrawal that removed
// it, so the withdrawal is repeated in the background in that case too.
func (e *Engine) releaseOrSettle(t Target, id string, c driver.Claim, claimed time.Time, mayLandLate bool) bool {
	release := e.releaser(t, id, c)
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.WriteTimeout)
	removed, err := release(ctx)
	cancel()
	if err == nil {
		if !removed || mayLandLate {
			e.releaseLateClaim(t, id, release)
		}
		return true
	}
	deadline := claimed.Add(t.Options.ClaimTTL)
	e.goSettle(func(stop <-chan struct{}) {
		err := e.retryUntil(stop, deadline, func(ctx context.Context) error {
			_, err := release(ctx)
			return err
		})
		if err != nil {
			e.cfg.Logger.Warn("ledger: could not withdraw a claim; it blocks retries of the request until it expires",
				"namespace", t.Namespace, "ledger", t.Ledger, "request_id", id, "err", err)
		}
	})
	return false
}

// releaser returns a withdrawal of the claim c of the request id: it
// removes the claim if it is exactly c, and reports whether it did.
func (e *Engine) releaser(t Target, id string, c driver.Claim) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		return e.cfg.Store.ReleaseClaim(ctx, &driver.ReleaseClaimParams{
			Namespace: t.Namespace, Ledger: t.Ledger, RequestID: id, Expect: c, Consistency: t.WriteConsistency,
		})
	}
}

// releaseLateClaim repeats a withdrawal that found nothing, for twice the
// write timeout, in case the claim lands late.
func (e *Engine) releaseLateClaim(t Target, id string, release func(context.Context) (bool, error)) {
	// Real time, not the injected clock: this waits out the store's own
	// in-flight transaction.
	until := time.Now().Add(2 * e.cfg.WriteTimeout)
	e.goSettle(func(stop <-chan struct{}) {
		pause := max(e.cfg.WriteTimeout/10, 10*time.Millisecond)
		for time.Now().Before(until) {
			timer := time.NewTimer(pause)
			select {
			case <-stop:
				timer.Stop()
				return
			case <-timer.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), e.cfg.WriteTimeout)
			removed, err := release(ctx)
			cancel()
			if err == nil && removed {
				e.stats.LateClaimsWithdrawn.Add(1)
				e.cfg.Logger.Info("ledger: withdrew a claim that landed after its first withdrawal",
					"namespace", t.Namespace, "ledger", t.Ledger, "request_id", id)
				return
			}
		}
	})
}

// Close stops background settling and waits for it, or for ctx. Requests
// it had not settled stay "unknown" until their claims expire.
func (e *Engine) Close(ctx context.Context) error {
	// First the batches under way, whose failed writes may still hand
	// work to the background; then the background.
	e.bg.Lock()
	e.bg.closing = true
	e.bg.Unlock()
	batchErr := waitFor(ctx, &e.bg.batches)
	e.returnAllRights(ctx)
	e.bg.Lock()
	if !e.bg.closed {
		e.bg.closed = true
		close(e.bg.stop)
	}
	e.bg.Unlock()
	if batchErr != nil {
		return fmt.Errorf("ledger: waiting for batches under way: %w", batchErr)
	}
	if err := waitFor(ctx, &e.bg.wg); err != nil {
		return fmt.Errorf("ledger: waiting for background settling: %w", err)
	}
	return nil
}

func waitFor(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
