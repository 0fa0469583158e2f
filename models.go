package abacus

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/abacusdb/abacus/actor"
	"github.com/abacusdb/abacus/cas"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/events"
)

// EventsOptions configure a namespace of model events. Zero fields take
// the documented defaults; a created namespace reports them filled in.
// Every process must use the same values, so they are stored with the
// namespace and cannot change.
type EventsOptions struct {
	// Bucket is the width of the time buckets events are partitioned by.
	// Default 1h.
	Bucket time.Duration
	// AcceptWindow is how long after its event time an increment, or a
	// retry of it, is accepted; an older one gets ErrTooLate. Default 1h.
	AcceptWindow time.Duration
	// RollupDelay is how much further back a rollup stops. It must exceed
	// the worst clock skew between servers plus the longest write.
	// Default 5m.
	RollupDelay time.Duration
	// FutureLimit is how far ahead of the server's clock an event time may
	// be. Default 1m.
	FutureLimit time.Duration
}

// Keys of the events options in the stored namespace record.
const (
	optBucket       = "bucket_seconds"
	optAcceptWindow = "accept_window_seconds"
	optRollupDelay  = "rollup_delay_seconds"
	optFutureLimit  = "future_limit_seconds"
)

func (o EventsOptions) engine() events.Options {
	return events.Options{
		Bucket: o.Bucket, AcceptWindow: o.AcceptWindow, RollupDelay: o.RollupDelay, FutureLimit: o.FutureLimit,
	}.WithDefaults()
}

func (o EventsOptions) toMap() map[string]string {
	e := o.engine()
	secs := func(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }
	return map[string]string{
		optBucket: secs(e.Bucket), optAcceptWindow: secs(e.AcceptWindow),
		optRollupDelay: secs(e.RollupDelay), optFutureLimit: secs(e.FutureLimit),
	}
}

// eventsOptionsFromMap reads stored options strictly: every process must
// agree on them, so a missing or damaged one is an error, not a default.
func eventsOptionsFromMap(m map[string]string) (EventsOptions, error) {
	var o EventsOptions
	for _, f := range []struct {
		key string
		dst *time.Duration
	}{{optBucket, &o.Bucket}, {optAcceptWindow, &o.AcceptWindow}, {optRollupDelay, &o.RollupDelay}, {optFutureLimit, &o.FutureLimit}} {
		v, ok := m[f.key]
		if !ok {
			return o, fmt.Errorf("%s is missing", f.key)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > int64(10*365*24*time.Hour/time.Second) {
			return o, fmt.Errorf("%s %q is not a valid number of seconds", f.key, v)
		}
		*f.dst = time.Duration(n) * time.Second
	}
	// A stored zero future limit means zero, not the default.
	if err := (events.Options{Bucket: o.Bucket, AcceptWindow: o.AcceptWindow, RollupDelay: o.RollupDelay, FutureLimit: o.FutureLimit}).Validate(); err != nil {
		return o, err
	}
	return o, nil
}

func (o EventsOptions) target() events.Options {
	return events.Options{Bucket: o.Bucket, AcceptWindow: o.AcceptWindow, RollupDelay: o.RollupDelay, FutureLimit: o.FutureLimit}
}

// modelError converts the model packages' sentinels to the Client's, so
// callers test one set of errors whatever the model.
func modelError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, actor.ErrVersionConflict):
		return tag(ErrVersionConflict, err)
	case errors.Is(err, events.ErrInvalid), errors.Is(err, actor.ErrInvalid):
		return tag(ErrInvalid, err)
	case errors.Is(err, events.ErrNotApplied), errors.Is(err, cas.ErrContention), errors.Is(err, cas.ErrNotApplied):
		return tag(ErrNotApplied, err)
	case errors.Is(err, cas.ErrOverflow), errors.Is(err, actor.ErrOverflow), errors.Is(err, driver.ErrOverflow):
		return tag(ErrOverflow, err)
	}
	return wrapDriverError(err)
}

func (c *Client) eventsTarget(ns *Namespace, counter string) events.Target {
	return events.Target{
		Namespace: ns.Name, Counter: counter, Options: ns.Events.target(),
		ReadConsistency: ns.ReadConsistency, WriteConsistency: ns.WriteConsistency,
	}
}

func casTarget(ns *Namespace, counter string) cas.Target {
	return cas.Target{Namespace: ns.Name, Counter: counter, ReadConsistency: ns.ReadConsistency, WriteConsistency: ns.WriteConsistency}
}

// resolveEvents finds the target of a counter listed by a rollup sweep.
func (c *Client) resolveEvents(ctx context.Context, k driver.CounterKey) (events.Target, bool, error) {
	ns, err := c.Namespace(ctx, k.Namespace)
	if errors.Is(err, ErrNamespaceNotFound) {
		return events.Target{}, false, nil
	}
	if err != nil {
		return events.Target{}, false, err
	}
	if ns.Model != ModelEvents {
		return events.Target{}, false, nil
	}
	return c.eventsTarget(ns, k.Counter), true, nil
}

// ActorSet sets one actor's part of a counter of model actor.
type ActorSet struct {
	// Namespace must be of model actor.
	Namespace string
	Counter   string
	// Actor names the writer whose part this is (1 to 256 bytes of UTF-8).
	Actor string
	// Version orders the actor's sets: the highest version wins whatever
	// order sets arrive in. Positive. One version must carry one value.
	Version int64
	// Value is the actor's absolute value.
	Value int64
}

// Set stores an actor's value of a counter of model actor. It is
// idempotent: sending the same set again, from anywhere, changes nothing.
//
// It first reads the counter (at the namespace's read consistency) and
// refuses, writing nothing, a different value at a version already stored
// (ErrVersionConflict) and a set that would take the sum outside the int64
// range (ErrOverflow). The read sees what reached the replicas it asks:
// two servers setting one version to different values at the same moment
// can both succeed, and the greater value then wins on every replica.
func (c *Client) Set(ctx context.Context, s ActorSet) error {
	ns, err := c.counterNamespace(ctx, s.Namespace, s.Counter)
	if err != nil {
		return err
	}
	if ns.Model != ModelActor {
		return fmt.Errorf("%w: namespace %q is of model %q; only actor namespaces take a set (use Apply for increments)", ErrWrongModel, ns.Name, ns.Model)
	}
	if err := actor.Validate(s.Actor, s.Version); err != nil {
		return modelError(err)
	}
	vals, err := c.cfg.Driver.ReadActorValues(ctx, &driver.ReadActorValuesParams{
		Namespace: ns.Name, Counter: s.Counter, Consistency: ns.ReadConsistency,
	})
	if err != nil {
		return wrapDriverError(err)
	}
	if err := actor.Check(vals, s.Actor, s.Version, s.Value); err != nil {
		return modelError(err)
	}
	err = c.cfg.Driver.SetActorValue(ctx, &driver.SetActorValueParams{
		Namespace: ns.Name, Counter: s.Counter, Actor: s.Actor, Value: s.Value, Version: s.Version,
		Consistency: ns.WriteConsistency,
	})
	return wrapDriverError(err)
}

// Clear resets a counter to zero. Only models that can do it safely offer
// it: events (every increment with an event time at or before the clear's
// time stops counting; repeating the clear with the same request id is
// harmless) and cas (a compare-and-set to zero). Other models return
// ErrWrongModel. requestID may be empty for a clear at the current time.
func (c *Client) Clear(ctx context.Context, namespace, counter, requestID string) error {
	ns, err := c.counterNamespace(ctx, namespace, counter)
	if err != nil {
		return err
	}
	if len(requestID) > MaxNameLen {
		return fmt.Errorf("%w: request id is longer than %d bytes", ErrInvalid, MaxNameLen)
	}
	switch ns.Model {
	case ModelEvents:
		_, err := c.events.Clear(ctx, c.eventsTarget(ns, counter), requestID, time.Time{})
		return modelError(err)
	case ModelCAS:
		_, err := cas.Set(ctx, c.cfg.Driver, casTarget(ns, counter), 0, cas.Options{})
		return modelError(err)
	case ModelNative:
		return fmt.Errorf("%w: native counters cannot be reset: a deleted Cassandra counter cannot be written again; use an events or cas namespace", ErrWrongModel)
	case ModelActor:
		return fmt.Errorf("%w: actor counters are reset by setting each actor's value to 0 at a higher version", ErrWrongModel)
	}
	return fmt.Errorf("%w: namespace %q is of model %q, which has no clear (only events and cas counters do)", ErrWrongModel, ns.Name, ns.Model)
}
