package cas

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/crdt"
	"github.com/abacusdb/abacus/internal/outcome"
)

// ErrContention means every attempt lost its compare-and-set to another
// writer. Nothing was applied; retrying is safe.
var ErrContention = outcome.Tag(outcome.ErrNotApplied, errors.New("compare-and-set lost to other writers on every attempt"))

// ErrNotApplied means nothing was written: the read that starts the loop
// failed. Retrying is safe.
var ErrNotApplied = outcome.Tag(outcome.ErrNotApplied, errors.New("not applied"))

// ErrOverflow means the result would leave the int64 range. Nothing was applied.
var ErrOverflow = outcome.Tag(crdt.ErrOverflow, errors.New("value would leave the int64 range"))

// Options tune the retry loop. Zero fields take the documented defaults.
type Options struct {
	// MaxAttempts bounds the compare-and-set attempts of one Add. Default 20.
	MaxAttempts int
	// BackoffBase is the first pause after a lost attempt; it doubles per
	// attempt, with full jitter. Default 2ms.
	BackoffBase time.Duration
	// BackoffMax caps the pause. Default 100ms.
	BackoffMax time.Duration
}

func (o Options) withDefaults() Options {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 20
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = 2 * time.Millisecond
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = 100 * time.Millisecond
	}
	return o
}

// Target is one counter and its levels.
type Target struct {
	Namespace        string
	Counter          string
	ReadConsistency  driver.Consistency
	WriteConsistency driver.Consistency
}

// Result is what Add did.
type Result struct {
	// Value is the counter's value right after the applied set.
	Value int64
	// Attempts is how many compare-and-sets were sent.
	Attempts int
}

// Add adds delta to the counter. An error wrapping driver.ErrUnknownOutcome
// means the last attempt may have applied.
func Add(ctx context.Context, store driver.CASCounters, t Target, delta int64, o Options) (Result, error) {
	return update(ctx, store, t, o, func(cur int64) (int64, error) {
		next, ok := crdt.AddInt64(cur, delta)
		if !ok {
			return 0, fmt.Errorf("%w: %d%+d", ErrOverflow, cur, delta)
		}
		return next, nil
	})
}

// Set stores value whatever the counter holds (used to clear it).
func Set(ctx context.Context, store driver.CASCounters, t Target, value int64, o Options) (Result, error) {
	return update(ctx, store, t, o, func(int64) (int64, error) { return value, nil })
}

func update(ctx context.Context, store driver.CASCounters, t Target, o Options, next func(int64) (int64, error)) (Result, error) {
	o = o.withDefaults()
	// A plain read, not a Paxos one: the compare-and-set checks the value
	// anyway, so a stale read costs one more round now and then, while a
	// serial read would cost a Paxos round on every add.
	cur, err := store.ReadCAS(ctx, &driver.ReadCASParams{
		Namespace: t.Namespace, Counter: t.Counter, Consistency: t.ReadConsistency,
	})
	if err != nil {
		// No compare-and-set was sent: the caller may retry safely, which
		// a bare read error would not tell it.
		return Result{}, fmt.Errorf("%w: reading the value before the compare-and-set: %w", ErrNotApplied, err)
	}
	var res Result
	for res.Attempts < o.MaxAttempts {
		v, err := next(cur.Value)
		if err != nil {
			return res, err
		}
		res.Attempts++
		r, err := store.CompareAndSetCAS(ctx, &driver.CompareAndSetCASParams{
			Namespace: t.Namespace, Counter: t.Counter, Expect: cur, Value: v, Consistency: t.WriteConsistency,
		})
		if err != nil {
			return res, err
		}
		if r.Applied {
			res.Value = v
			return res, nil
		}
		// The failed transaction told us the current value: no re-read.
		cur = r.Current
		pause := o.BackoffBase << min(res.Attempts-1, 20)
		if pause > o.BackoffMax || pause <= 0 {
			pause = o.BackoffMax
		}
		select {
		case <-ctx.Done():
			return res, fmt.Errorf("%w after %d attempts: %w", ErrContention, res.Attempts, ctx.Err())
		case <-time.After(rand.N(pause) + 1):
		}
	}
	return res, fmt.Errorf("%w (%d attempts)", ErrContention, res.Attempts)
}
